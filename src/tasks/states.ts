/**
 * Terminology
 * - task: one unit of work in a graph, with a spec (what to run, how to verify) and a status.
 * - claim: an owner's exclusive right to run a task, taken atomically in Postgres.
 * - claim version: a counter bumped by every claim; the fencing token every owner write carries.
 * - lease: how long a claim lasts without a heartbeat, computed with the database clock.
 * - artifact: what a run produced: commit revision, test command and the agent's own result.
 * - verification: a check of the exact artifact by someone other than the agent.
 * - fence: the predicate (id + owner + claim version + status) every owner write must match.
 * - release: making a dependent ready once all its dependencies are verified, pinning their revisions.
 */

/** Every task status, in lifecycle order; rows of baton.task_statuses, compared by a test. */
export const TASK_STATUSES = [
  'blocked',
  'ready',
  'running',
  'submitted',
  'verifying',
  'awaiting_approval',
  'verified',
  'rejected',
  'stale',
  'failed',
  'cancelled',
] as const;

export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * The only status changes Postgres allows (a trigger refuses the rest): the rows of
 * baton.task_transitions (migrations 0003, 0008, 0010, 0016), compared with this list by a test. A change here is
 * a new migration.
 */
export const TASK_TRANSITIONS: ReadonlyArray<readonly [TaskStatus, TaskStatus]> = [
  ['blocked', 'ready'], // all dependencies verified
  ['blocked', 'cancelled'],
  ['ready', 'running'], // claimed
  ['ready', 'blocked'], // an upstream task is being re-run
  ['ready', 'cancelled'],
  ['ready', 'failed'], // attempts used up
  ['running', 'submitted'], // the owner's fenced submit
  ['running', 'ready'], // released, or reclaimed after silence
  ['running', 'blocked'], // given back while an upstream task is being re-run
  ['running', 'failed'],
  ['running', 'cancelled'],
  ['submitted', 'verifying'],
  ['submitted', 'cancelled'],
  ['verifying', 'verified'],
  ['verifying', 'rejected'],
  ['verifying', 'submitted'], // the verifier itself was lost; verify again
  ['verifying', 'stale'], // passed, but on a pin its upstream task has since superseded (migration 0008)
  ['verifying', 'cancelled'], // cancelled while being verified: the verifier's result is then refused (migration 0010)
  ['verifying', 'awaiting_approval'], // the check passed; a person decides (migration 0016)
  ['awaiting_approval', 'verifying'], // a person decided, or the wait ran out: recorded as the verification
  ['awaiting_approval', 'cancelled'],
  ['rejected', 'ready'], // retry policy: run again
  ['rejected', 'failed'],
  ['rejected', 'cancelled'], // migration 0010
  ['verified', 'stale'], // an upstream task was verified at a new revision
  ['verified', 'ready'], // re-run requested
  ['stale', 'verifying'], // check the same artifact again
  ['stale', 'ready'], // re-run it on the new upstream revisions
  ['stale', 'cancelled'], // migration 0010
  ['failed', 'ready'], // manual retry
];

/** Statuses a task never leaves on its own. */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['verified', 'failed', 'cancelled']);

/**
 * A graph's state, derived from its tasks' statuses by `baton.graph_list` (reads.sql): the first of
 * these that holds. verified: every task is; running: some task is ready, running, submitted,
 * verifying or rejected, so work goes on without anyone; awaiting_approval: nothing runs, and some
 * task waits for a person's approval; failed, cancelled, stale: some task is (nothing more happens
 * until someone reruns or cancels); blocked: only blocked tasks are left.
 */
export const GRAPH_STATES = ['verified', 'running', 'awaiting_approval', 'failed', 'cancelled', 'stale', 'blocked'] as const;

export type GraphState = (typeof GRAPH_STATES)[number];
