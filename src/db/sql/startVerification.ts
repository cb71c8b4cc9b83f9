import type { Artifact, TaskSpec } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

/** T7: a verifier (never the agent that produced it) takes a submitted or stale artifact to check. */
export async function startVerification(db: Queryable, taskId: string, verifier: string) {
  const [row] = await callStore<{ claim_version: number; artifact: Artifact; spec: TaskSpec }>(db, 'verification_start', [taskId, verifier]);
  return { claimVersion: row!.claim_version, artifact: row!.artifact, spec: row!.spec };
}
