// Bindings of src/db/functions/reads.sql: what components read (SPEC S1), each through a function.
import { GRAPH_LIST_LIMIT_DEFAULT } from '../../config.js';
import type { GraphSpec } from '../../tasks/graphSpec.js';
import { TASK_STATUSES, type GraphState, type TaskStatus } from '../../tasks/states.js';
import type { GraphSummary, TaskEvent, TaskRow } from '../../tasks/types.js';
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

/** One graph's state (GRAPH_STATES), as `graphList` gives it, and its tasks' ids by status; NotFoundError when the graph does not exist. */
export async function graphProgress(
  db: Queryable,
  graphId: string,
): Promise<{ state: GraphState; taskIds: Partial<Record<TaskStatus, string[]>> }> {
  const [row] = await callStore<{ state: GraphState; task_ids: Partial<Record<TaskStatus, string[]>> }>(db, 'graph_progress', [graphId]);
  return { state: row!.state, taskIds: row!.task_ids };
}

/** Which graphs `graphList` returns. */
export interface GraphListFilter {
  /** Only graphs in this state. (Default: any) */
  state?: GraphState;
  /** Only graphs submitted this long ago or later, by the database clock. (Default: any age) */
  submittedWithinMs?: number;
  /** At most this many, newest first. (Default: GRAPH_LIST_LIMIT_DEFAULT, 50) */
  limit?: number;
}

type GraphListRecord = {
  id: string;
  submitted_by: string;
  submitted_at: Date;
  tasks: number;
  counts: Record<string, number>;
  state: GraphState;
};

/** Graphs newest first, each with its task count, how many tasks are in each status, and its state. */
export async function graphList(db: Queryable, filter: GraphListFilter = {}): Promise<GraphSummary[]> {
  const within = filter.submittedWithinMs === undefined ? null : `${filter.submittedWithinMs} milliseconds`;
  const rows = await callStore<GraphListRecord>(db, 'graph_list', [filter.state ?? null, within, filter.limit ?? GRAPH_LIST_LIMIT_DEFAULT]);
  return rows.map((r) => ({
    id: r.id,
    submittedBy: r.submitted_by,
    submittedAt: r.submitted_at.toISOString(),
    tasks: r.tasks,
    counts: Object.fromEntries(TASK_STATUSES.map((s) => [s, r.counts[s] ?? 0])) as Record<TaskStatus, number>,
    state: r.state,
  }));
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
