import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../src/db/queryable.js';
import { createObject, grantObjectAccess } from '../../src/objects/objectStore.js';
import { HOLDER_CHANGE_KINDS, type ObjectAccess, type ObjectEvent } from '../../src/objects/types.js';

/** A key no other test uses. */
export function uniqueObjectKey(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * Test-only time travel: moves the holder's last heartbeat `ms` into the past, on the database's
 * clock, so the holder is silent without the test sleeping. Production code never writes
 * baton.objects directly (S1); this helper runs as the table owner.
 */
export async function silenceHolder(db: Queryable, key: string, ms: number): Promise<void> {
  await db.query(
    `UPDATE baton.objects SET holder_heartbeat_at = now() - make_interval(secs => $2::double precision / 1000)
      WHERE key = $1 AND holder IS NOT NULL`,
    [key, ms],
  );
}

/** Creates `key` as `creator` and grants each actor its access. */
export async function insertObject(
  db: Queryable,
  creator: string,
  key: string,
  grants: Record<string, ObjectAccess>,
  options: { silenceTimeoutMs?: number } = {},
): Promise<void> {
  await createObject(db, creator, { key, silenceTimeoutMs: options.silenceTimeoutMs });
  for (const [grantee, access] of Object.entries(grants)) await grantObjectAccess(db, creator, { key, grantee, access });
}

/** Every event of one object, oldest first, read as the table owner (no permission check). */
export async function objectEvents(db: Queryable, key: string, afterSeq = 0): Promise<ObjectEvent[]> {
  const { rows } = await db.query(
    `SELECT subject_seq, kind, actor, at, fence, version, reason, details FROM baton.events
      WHERE subject_kind = 'object' AND subject_id = $1 AND subject_seq > $2 ORDER BY subject_seq`,
    [key, afterSeq],
  );
  return rows.map((r) => ({
    seq: r.subject_seq,
    kind: r.kind,
    actor: r.actor,
    at: (r.at as Date).toISOString(),
    fence: r.fence === null ? null : Number(r.fence),
    version: r.version === null ? null : Number(r.version),
    reason: r.reason,
    details: r.details,
  }));
}

/**
 * Replays an object's log and returns every way it breaks the store's invariants: sequence gaps,
 * a token that does not move by exactly 1 per change of holder, a holder change without a reason
 * or whose `from` is not the previous holder, a write or approval by someone who did not hold the
 * role with that token, or a version that does not move by exactly 1.
 */
export function logViolations(events: ObjectEvent[]): string[] {
  const problems: string[] = [];
  let holder: string | null = null;
  let token = 0;
  let version: number | null = null;
  events.forEach((e, i) => {
    if (e.seq !== i + 1) problems.push(`event ${i + 1} has seq ${e.seq}`);
    if ((HOLDER_CHANGE_KINDS as readonly string[]).includes(e.kind)) {
      if (e.fence !== token + 1) problems.push(`#${e.seq} ${e.kind}: token ${token} -> ${e.fence}`);
      if (!e.reason) problems.push(`#${e.seq} ${e.kind}: no reason`);
      if (!('from' in e.details) || !('to' in e.details)) problems.push(`#${e.seq} ${e.kind}: no from/to`);
      if ((e.details.from ?? null) !== holder) problems.push(`#${e.seq} ${e.kind}: from ${String(e.details.from)}, holder was ${holder}`);
      holder = (e.details.to as string | null) ?? null;
      token = e.fence ?? token;
    } else if (e.fence !== null && e.fence !== token) {
      problems.push(`#${e.seq} ${e.kind}: fence ${e.fence}, token is ${token}`);
    }
    if (e.kind === 'created') version = e.version;
    if (e.kind === 'written' || e.kind === 'suggestion_approved') {
      if (e.actor !== holder || e.fence !== token) {
        problems.push(`#${e.seq} ${e.kind} by ${e.actor} with token ${e.fence}; holder ${holder}, token ${token}`);
      }
      if (version === null || e.version !== version + 1) problems.push(`#${e.seq} ${e.kind}: version ${version} -> ${e.version}`);
      version = e.version;
    }
  });
  return problems;
}
