import type { Queryable } from '../db/queryable.js';
import { callStore } from '../db/storeCall.js';
import { refusalError } from './errors.js';
import type { ObjectRefusalCode, ObjectSnapshot, ObjectState } from './types.js';

/** A row of `baton.object_outcome`, the type every `baton.object_*` function returns. */
interface ObjectOutcomeRow {
  ok: boolean;
  refusal: ObjectRefusalCode | null;
  reason: string | null;
  key: string;
  version: number;
  token: number;
  holder: string | null;
  holder_since: Date | null;
  holder_heartbeat_at: Date | null;
  holder_silent: boolean;
  silence_timeout_ms: number;
  offer_to: string | null;
  offer_version: number | null;
  offered_at: Date | null;
  content: string | null;
  content_ref: string | null;
  suggestion_id: number | null;
  at: Date;
  [column: string]: unknown;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function toObjectState(row: ObjectOutcomeRow): ObjectState {
  return {
    key: row.key,
    version: Number(row.version),
    token: Number(row.token),
    holder: row.holder,
    holderSince: iso(row.holder_since),
    holderHeartbeatAt: iso(row.holder_heartbeat_at),
    holderSilent: row.holder_silent,
    silenceTimeoutMs: row.silence_timeout_ms,
    offer: row.offer_to === null ? null : { to: row.offer_to, version: Number(row.offer_version), offeredAt: iso(row.offered_at)! },
    at: row.at.toISOString(),
  };
}

export function toObjectSnapshot(row: ObjectOutcomeRow): ObjectSnapshot {
  return { ...toObjectState(row), content: row.content, contentRef: row.content_ref };
}

/** The store's SQL functions (src/db/functions/objects*.sql); each takes the key and the actor first. */
type ObjectFunction =
  | 'object_create'
  | 'object_grant'
  | 'object_reserve'
  | 'object_show'
  | 'object_read'
  | 'object_take'
  | 'object_write'
  | 'object_heartbeat'
  | 'object_release'
  | 'object_offer'
  | 'object_accept'
  | 'object_decline'
  | 'object_withdraw'
  | 'object_suggest'
  | 'object_approve'
  | 'object_check_view';

/**
 * Runs `baton.<fn>(key, actor, ...args)` and returns its outcome row. A refusal (recorded by the
 * function as an event, and committed with it) is thrown as its typed error.
 */
export async function callObjectFunction(
  db: Queryable,
  fn: ObjectFunction,
  call: { key: string; actor: string; operation: string },
  args: readonly unknown[] = [],
): Promise<ObjectOutcomeRow> {
  return checkedOutcome((await callStore<ObjectOutcomeRow>(db, fn, [call.key, call.actor, ...args]))[0]!, call);
}

/** The row of a call the store accepted; a refusal (already recorded as an event) is thrown as its typed error. */
export function checkedOutcome(row: ObjectOutcomeRow, call: { key: string; actor: string; operation: string }): ObjectOutcomeRow {
  if (!row.ok) {
    throw refusalError({ ...call, refusal: row.refusal!, reason: row.reason ?? row.refusal!, state: toObjectState(row) });
  }
  return row;
}

/** An outcome row that came back as JSON (through `baton.agent_call`): its times become Dates again. */
export function outcomeFromJson(json: Record<string, unknown>): ObjectOutcomeRow {
  const at = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    ...(json as ObjectOutcomeRow),
    holder_since: at(json.holder_since),
    holder_heartbeat_at: at(json.holder_heartbeat_at),
    offered_at: at(json.offered_at),
    at: at(json.at)!,
  };
}
