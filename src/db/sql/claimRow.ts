import type { Claim } from '../../tasks/types.js';

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
