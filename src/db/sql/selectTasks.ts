import { mapDatabaseErrors, NotFoundError } from '../../errors.js';
import type { TaskRow } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';

const TASK_COLUMNS = `t.id, t.graph_id, t.key, t.spec, t.status, t.owner, t.claim_version, t.claimed_at, t.lease_expires_at,
  t.attempts, t.progress, t.artifact, t.verified_revision, t.upstream_revisions, coalesce(t.lease_expires_at < now(), false) AS lease_expired,
  coalesce((SELECT array_agg(u.key ORDER BY u.key) FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
            WHERE d.task_id = t.id), '{}') AS depends_on`;

function toTaskRow(r: Record<string, any>): TaskRow {
  return {
    id: r.id,
    graphId: r.graph_id,
    key: r.key,
    spec: r.spec,
    status: r.status,
    owner: r.owner,
    claimVersion: r.claim_version,
    claimedAt: r.claimed_at?.toISOString() ?? null,
    leaseExpiresAt: r.lease_expires_at?.toISOString() ?? null,
    leaseExpired: r.lease_expired,
    attempts: r.attempts,
    progress: r.progress,
    artifact: r.artifact,
    verifiedRevision: r.verified_revision,
    upstreamRevisions: r.upstream_revisions,
    dependsOn: r.depends_on,
  };
}

/** One task by id; NotFoundError when it does not exist. */
export function selectTask(db: Queryable, taskId: string): Promise<TaskRow> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query(`SELECT ${TASK_COLUMNS} FROM baton.tasks t WHERE t.id = $1`, [taskId]);
    if (!rows[0]) throw new NotFoundError(`task ${taskId} does not exist`);
    return toTaskRow(rows[0]);
  });
}

/** Every task of a graph, by key; NotFoundError when the graph does not exist. */
export function selectGraphTasks(db: Queryable, graphId: string): Promise<TaskRow[]> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query(
      `SELECT ${TASK_COLUMNS}, g.id AS graph FROM baton.graphs g LEFT JOIN baton.tasks t ON t.graph_id = g.id
        WHERE g.id = $1 ORDER BY t.key`,
      [graphId],
    );
    if (!rows[0]) throw new NotFoundError(`graph ${graphId} does not exist`);
    return rows.filter((r) => r.id !== null).map(toTaskRow);
  });
}
