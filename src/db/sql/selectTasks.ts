import type { TaskRow } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

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
export async function selectTask(db: Queryable, taskId: string): Promise<TaskRow> {
  return toTaskRow((await callStore(db, 'task_read', [taskId]))[0]!);
}

/** Every task of a graph, by key; NotFoundError when the graph does not exist. */
export async function selectGraphTasks(db: Queryable, graphId: string): Promise<TaskRow[]> {
  return (await callStore(db, 'graph_read_tasks', [graphId])).map(toTaskRow);
}
