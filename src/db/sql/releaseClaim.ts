import type { Queryable } from '../queryable.js';
import { callStoreValue } from '../storeCall.js';

/** Why a claim is given back: its owner went silent, or its run failed under the agent. */
export type ReleaseKind = 'reclaimed_after_silence' | 'claim_released';

/**
 * T6: makes a running task claimable again, but only if `claimVersion` is still the current claim.
 * Returns false (and changes nothing) when the task has moved on.
 */
export function releaseClaim(
  db: Queryable,
  release: { taskId: string; claimVersion: number; actor: string; kind: ReleaseKind; reason: string; details?: Record<string, unknown> },
): Promise<boolean> {
  return callStoreValue<boolean>(db, 'claim_release', [
    release.taskId, release.claimVersion, release.actor, release.kind, release.reason, release.details ?? {},
  ]);
}
