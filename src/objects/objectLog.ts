import type { Queryable } from '../db/queryable.js';
import { callStore } from '../db/storeCall.js';
import { parseObjectInput } from './objectInput.js';
import { showObject } from './objectStore.js';
import type { ObjectEvent } from './types.js';

/** Most events `objectLog` returns unless told otherwise. */
const OBJECT_LOG_LIMIT_DEFAULT = 1000;

/**
 * The object's story, oldest first (E1): who took, wrote, offered, refused what, when and why.
 * Needs view access, checked (and a refusal recorded) by `showObject`.
 */
export async function objectLog(
  db: Queryable,
  actor: string,
  input: { key: string; afterSeq?: number; limit?: number },
): Promise<ObjectEvent[]> {
  const args = parseObjectInput('log', input);
  await showObject(db, actor, { key: args.key });
  const rows = await callStore<{
    subject_seq: number;
    kind: string;
    actor: string;
    at: Date;
    fence: number | null;
    version: number | null;
    reason: string | null;
    details: Record<string, unknown>;
  }>(db, 'object_read_events', [args.key, args.afterSeq ?? 0, args.limit ?? OBJECT_LOG_LIMIT_DEFAULT]);
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
