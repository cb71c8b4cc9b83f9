// Bindings of src/db/functions/claims.sql: taking and giving back a task's claim (SPEC T3, T6).
import type { Claim } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore, callStoreValue } from '../storeCall.js';

/** Columns of the `baton.claim` composite as they come back from the claim functions. */
export interface ClaimRecord {
  task_id: string;
  graph_id: string;
  key: string;
  spec: Claim['spec'];
  claim_version: number;
  lease_expires_at: Date;
  attempts: number;
  upstream_revisions: Record<string, string>;
  [column: string]: unknown;
}

export function toClaim(row: ClaimRecord): Claim {
  return {
    taskId: row.task_id,
    graphId: row.graph_id,
    key: row.key,
    spec: row.spec,
    claimVersion: row.claim_version,
    leaseExpiresAt: row.lease_expires_at.toISOString(),
    attempts: row.attempts,
    upstreamRevisions: row.upstream_revisions,
  };
}

/** Where a graph's runs and verifications work: its repository (none: the agent's own directory) and base. */
export interface GraphSource {
  repo?: string;
  base: string;
}

/** The graph source of a row with its graph's `repo` and `base` columns. */
export function graphSourceOf(row: { repo: string | null; base: string }): GraphSource {
  return { ...(row.repo === null ? {} : { repo: row.repo }), base: row.base };
}

/**
 * T3: claims the named task if it is ready and, given `maxAttempts`, has attempts left; undefined
 * when it is not (never waits on a lock). With the claim, where its graph's runs work (`source`).
 */
export async function taskClaim(
  db: Queryable,
  taskId: string,
  owner: string,
  leaseMs: number,
  maxAttempts?: number,
): Promise<(Claim & { source: GraphSource }) | undefined> {
  const [row] = await callStore<ClaimRecord & { repo: string | null; base: string }>(db, 'task_claim', [
    taskId,
    owner,
    leaseMs,
    maxAttempts ?? null,
  ]);
  return row ? { ...toClaim(row), source: graphSourceOf(row) } : undefined;
}

/** T3: claims the oldest ready task (optionally in one graph); undefined when none is ready. */
export async function taskClaimNext(db: Queryable, owner: string, leaseMs: number, graphId?: string): Promise<Claim | undefined> {
  const [row] = await callStore<ClaimRecord>(db, 'task_claim_next', [owner, leaseMs, graphId ?? null]);
  return row ? toClaim(row) : undefined;
}

/**
 * Why a claim is given back: its owner went silent, its run failed under the agent, or its owner
 * handed it back unfinished as it shut down (only the owner may; the attempt is given back too).
 */
type ReleaseKind = 'reclaimed_after_silence' | 'claim_released' | 'handed_back';

/**
 * T6: makes a running task claimable again, but only if `claimVersion` is still the current claim.
 * Returns false (and changes nothing) when the task has moved on.
 */
export function claimRelease(
  db: Queryable,
  release: { taskId: string; claimVersion: number; actor: string; kind: ReleaseKind; reason: string; details?: Record<string, unknown> },
): Promise<boolean> {
  return callStoreValue<boolean>(db, 'claim_release', [
    release.taskId,
    release.claimVersion,
    release.actor,
    release.kind,
    release.reason,
    release.details ?? {},
  ]);
}

/** A claim whose lease ran out on the database clock: its owner has not heartbeated for `leaseMs`. */
export interface SilentClaim {
  taskId: string;
  owner: string;
  claimVersion: number;
  leaseMs: number;
}

/** T6: the claims whose lease ran out in the last `withinMs`, the latest first (at most `limit`); reads only. */
export async function claimsSilent(db: Queryable, limit: number, withinMs: number): Promise<SilentClaim[]> {
  const rows = await callStore<{ task_id: string; owner: string; claim_version: number; lease_ms: number }>(db, 'claims_silent', [
    limit,
    withinMs,
  ]);
  return rows.map((r) => ({ taskId: r.task_id, owner: r.owner, claimVersion: r.claim_version, leaseMs: r.lease_ms }));
}
