// Bindings of src/db/functions/reads.sql: what components read (SPEC S1), each through a function.
import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { TaskEvent, TaskRow } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';
import { toToolCallRow, type ToolCallRow } from './toolCalls.js';

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
export async function taskRead(db: Queryable, taskId: string): Promise<TaskRow> {
  return toTaskRow((await callStore(db, 'task_read', [taskId]))[0]!);
}

/** Every task of a graph, by key; NotFoundError when the graph does not exist. */
export async function graphReadTasks(db: Queryable, graphId: string): Promise<TaskRow[]> {
  return (await callStore(db, 'graph_read_tasks', [graphId])).map(toTaskRow);
}

/** The graph as submitted; NotFoundError when it does not exist. */
export async function graphRead(db: Queryable, graphId: string): Promise<GraphSpec & { submittedBy: string; submittedAt: string }> {
  const [row] = await callStore<{ spec: GraphSpec; submitted_by: string; submitted_at: Date }>(db, 'graph_read', [graphId]);
  return { ...row!.spec, submittedBy: row!.submitted_by, submittedAt: row!.submitted_at.toISOString() };
}

/** Where a graph's runs work (repo, base), without loading its spec; NotFoundError when it does not exist. */
export async function graphReadSource(db: Queryable, graphId: string): Promise<{ repo?: string; base: string }> {
  const [row] = await callStore<{ repo: string | null; base: string }>(db, 'graph_read_source', [graphId]);
  return { ...(row!.repo === null ? {} : { repo: row!.repo }), base: row!.base };
}

type SubjectKind = 'task' | 'object' | 'graph';

/**
 * The event log of one subject in order, or of every task of a graph when `subjectId` names a
 * graph and `includeGraphTasks` is set.
 */
export async function eventRead(
  db: Queryable,
  subjectKind: SubjectKind,
  subjectId: string,
  options: { includeGraphTasks?: boolean; afterId?: number } = {},
): Promise<TaskEvent[]> {
  const rows = await callStore(db, 'event_read', [subjectKind, subjectId, options.afterId ?? 0, options.includeGraphTasks ?? false]);
  return rows.map((r) => ({
    id: r.id,
    subjectId: r.subject_id,
    seq: r.subject_seq,
    kind: r.kind,
    actor: r.actor,
    at: r.at.toISOString(),
    fence: r.fence,
    reason: r.reason,
    details: r.details,
  }));
}

/** The ledger rows of one task, or of every task of a graph when `id` has no `/`, oldest first. */
export async function toolCallRead(db: Queryable, id: string): Promise<Array<ToolCallRow & { taskId: string; step: string }>> {
  const rows = await callStore(db, 'tool_call_read', [id]);
  return rows.map((r) => ({ ...toToolCallRow(r), taskId: r.task_id, step: r.step }));
}

export interface HealthCheckRow {
  id: number;
  workflowId: string;
  message: string;
  recordedAt: string;
}

type HealthCheckRecord = { id: number; workflow_id: string; message: string; recorded_at: Date };

const toHealthCheckRow = (r: HealthCheckRecord): HealthCheckRow => ({
  id: r.id,
  workflowId: r.workflow_id,
  message: r.message,
  recordedAt: r.recorded_at.toISOString(),
});

/** The most recent health checks, newest first. */
export async function healthCheckRead(db: Queryable, limit = 10): Promise<HealthCheckRow[]> {
  return (await callStore<HealthCheckRecord>(db, 'health_check_read', [limit])).map(toHealthCheckRow);
}

/** Records one health check; a retried activity finds its earlier row instead of adding one. */
export async function healthCheckRecord(db: Queryable, workflowId: string, message: string): Promise<HealthCheckRow> {
  const [row] = await callStore<HealthCheckRecord>(db, 'health_check_record', [workflowId, message]);
  return toHealthCheckRow(row!);
}
