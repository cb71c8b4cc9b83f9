import type { Queryable } from '../db/queryable.js';
import { callStore } from '../db/storeCall.js';
import { showObject } from './objectStore.js';
import type { ObjectEvent } from './types.js';
import { checkCounter, checkInput } from './validateObjectInput.js';

/** Most events `objectLog` returns unless told otherwise. */
export const OBJECT_LOG_LIMIT_DEFAULT = 1000;
/** Largest event number and limit: they are Postgres integers. */
const PG_INTEGER_MAX = 2 ** 31 - 1;

/**
 * The object's story, oldest first (E1): who took, wrote, offered, refused what, when and why.
 * Needs view access, checked (and a refusal recorded) by `showObject`.
 */
export async function objectLog(
  db: Queryable,
  actor: string,
  input: { key: string; afterSeq?: number; limit?: number },
): Promise<ObjectEvent[]> {
  const afterSeq = checkCounter(checkInput(input).afterSeq ?? 0, 'afterSeq', PG_INTEGER_MAX);
  const limit = checkCounter(input.limit ?? OBJECT_LOG_LIMIT_DEFAULT, 'limit', PG_INTEGER_MAX);
  await showObject(db, actor, input);
  const rows = await callStore<{
    subject_seq: number;
    kind: string;
    actor: string;
    at: Date;
    fence: number | null;
    version: number | null;
    reason: string | null;
    details: Record<string, unknown>;
  }>(db, 'read_object_events', [input.key, afterSeq, limit]);
  return rows.map((r) => ({
    seq: r.subject_seq,
    kind: r.kind,
    actor: r.actor,
    at: r.at.toISOString(),
    fence: r.fence === null ? null : Number(r.fence),
    version: r.version === null ? null : Number(r.version),
    reason: r.reason,
    details: r.details,
  }));
}
