import { mapDatabaseErrors } from '../../errors.js';
import type { Artifact, TaskSpec } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';

/** T7: a verifier (never the agent that produced it) takes a submitted or stale artifact to check. */
export function startVerification(db: Queryable, taskId: string, verifier: string) {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<{ claim_version: number; artifact: Artifact; spec: TaskSpec }>(
      'SELECT * FROM baton.start_verification($1, $2)',
      [taskId, verifier],
    );
    const row = rows[0]!;
    return { claimVersion: row.claim_version, artifact: row.artifact, spec: row.spec };
  });
}
