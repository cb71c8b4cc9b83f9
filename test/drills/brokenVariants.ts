// Deliberately broken builds of baton's store: each drill must fail against one of these, which
// proves the drill can fail. They live in the tests only; production code has no switch for them.
import type { ClaimFn } from '../../src/drills/d1ClaimRace.js';
import type { SubmitFn } from '../../src/drills/d3StaleSubmit.js';

/** A plain read-then-update claim, as many hand-rolled queues do it: no lock, no claim version. */
export const readThenUpdateClaim: ClaimFn = async (db, taskId, owner) => {
  const { rows } = await db.query('SELECT status FROM baton.tasks WHERE id = $1', [taskId]);
  if (rows[0]?.status !== 'ready') return false;
  const { rowCount } = await db.query(
    "UPDATE baton.tasks SET status = 'running', owner = $2, lease_expires_at = now() + interval '1 minute' WHERE id = $1",
    [taskId, owner],
  );
  return rowCount === 1;
};

/** Submit with the fencing predicate removed: keyed by task id only. */
export const unfencedSubmit: SubmitFn = async (db, fence, artifact) => {
  await db.query("UPDATE baton.tasks SET status = 'submitted', artifact = $2, owner = $3 WHERE id = $1 AND status = 'running'", [
    fence.taskId,
    artifact,
    fence.owner,
  ]);
  await db.query("SELECT baton.event_append('task', $1, 'submitted', $2, $3)", [fence.taskId, fence.owner, fence.claimVersion]);
};

/**
 * Releases dependents on the agent's say-so, at submit time. For this to reach the table the
 * broken build must also lack the database's release guard (see dropReleaseGuard).
 */
export const releasingSubmit: SubmitFn = async (db, fence, artifact) => {
  await db.query('SELECT * FROM baton.task_submit($1, $2, $3, $4)', [fence.taskId, fence.owner, fence.claimVersion, artifact]);
  await db.query(
    `UPDATE baton.tasks t SET status = 'ready' FROM baton.task_dependencies d
      WHERE d.depends_on = $1 AND t.id = d.task_id AND t.status = 'blocked'`,
    [fence.taskId],
  );
};

export const dropReleaseGuard = 'DROP TRIGGER tasks_release_guard ON baton.tasks';
