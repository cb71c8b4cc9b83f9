import { setMaxListeners } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@temporalio/client';
import { TASK_QUEUE_DEFAULT } from './config.js';
import type { Queryable } from './db/queryable.js';
import { graphAddTasks, proposalDecide, proposalList, taskSetStatus, graphSubmit } from './db/sql/graphs.js';
import { poolLimitSet } from './db/sql/poolRuns.js';
import { eventRead, graphList, graphProgress, graphRead, graphReadTasks, taskRead, type GraphListFilter } from './db/sql/reads.js';
import { approvalDecide, approvalList, type VerificationOutcome } from './db/sql/verification.js';
import { IllegalTransitionError, InvalidInputError } from './errors.js';
import { parseGraphAddition, parseGraphSpec, type GraphSpec } from './tasks/graphSpec.js';
import { TASK_STATUSES, TERMINAL_STATUSES, type GraphState, type TaskStatus } from './tasks/states.js';
import type { Approval, GraphSummary, Proposal, TaskEvent, TaskRow } from './tasks/types.js';
import { isTaskId, taskIdOf, taskWorkflowId } from './tasks/taskId.js';
import { workflowControl } from './workflowControl.js';
import { pause } from './pause.js';
import type { TaskWorkflowResult } from '../workflows/definitions.js';

/** What a cancellation did: the tasks it cancelled, and those it left as they were (finished). */
interface CancelOutcome {
  cancelled: string[];
  left: { taskId: string; status: TaskStatus }[];
}

export interface BatonClientOptions {
  db: Queryable;
  temporal: Client;
  /** (Default: `baton`) */
  taskQueue?: string;
}

/**
 * What a team's code uses to submit graphs and read their state: Postgres for the truth
 * (status, owners, versions, events), Temporal to start and await its task workflows.
 */
export function createBatonClient(options: BatonClientOptions) {
  const { db, temporal } = options;
  const taskQueue = options.taskQueue ?? TASK_QUEUE_DEFAULT;
  const workflows = workflowControl(temporal, taskQueue);
  // Postgres first: from then on the owner's heartbeats and submit are refused, whatever Temporal does.
  // Each task's workflow is cancelled as soon as its row is, so a failure later leaves no half-cancelled task.
  const cancelTasks = async (tasks: TaskRow[], actor: string, reason: string): Promise<CancelOutcome> => {
    const outcome: CancelOutcome = { cancelled: [], left: [] };
    for (const task of tasks) {
      // Anything that has not finished may be cancelled, a verification included (T12).
      const status = !TERMINAL_STATUSES.has(task.status)
        ? await taskSetStatus(db, { taskId: task.id, actor, to: 'cancelled', kind: 'cancelled', reason }).then(
            () => undefined,
            // It finished since it was read (say, it was verified): it is left as it is now.
            async (error: unknown) => {
              if (!(error instanceof IllegalTransitionError)) throw error;
              return (await taskRead(db, task.id)).status;
            },
          )
        : task.status;
      if (status) {
        outcome.left.push({ taskId: task.id, status });
        continue;
      }
      outcome.cancelled.push(task.id);
      await workflows.cancelTask(task.id);
    }
    return outcome;
  };
  return {
    /**
     * Validates a graph (unknown key, wrong type, unknown dependency, cycle, duplicate key, size
     * limits: one InvalidGraphError listing every problem, nothing written), writes it atomically
     * and starts the lifecycle workflows of its roots. Submitting the same graph again (say Temporal
     * did not answer the first time) starts any root workflow that is missing, and changes nothing else.
     */
    async submitGraph(input: unknown, submittedBy: string, parseOptions?: Parameters<typeof parseGraphSpec>[1]): Promise<GraphSpec> {
      const graph = parseGraphSpec(input, parseOptions);
      try {
        await graphSubmit(db, graph, submittedBy);
      } catch (error) {
        // The same graph again (say its submitter died before starting its roots): start what is missing.
        const existing = error instanceof InvalidInputError ? await graphRead(db, graph.id).catch(() => undefined) : undefined;
        if (!existing || !sameGraph(existing, graph)) throw error;
      }
      // Postgres made the roots ready as it wrote them; each root's workflow starts those of the
      // dependents its verification releases, and so on down the graph.
      const roots = graph.tasks.filter((t) => t.dependsOn.length === 0).map((t) => taskIdOf(graph.id, t.key));
      await workflows.startReadyTasks(roots, graph.policy);
      return graph;
    },

    /**
     * U11: adds tasks to the running graph `graphId`, as `actor`: `input` is a mapping with a `tasks`
     * list as a graph file has it, each depending on tasks of the graph or on others added with it.
     * They are validated with the graph's own (one InvalidGraphError naming every problem, nothing
     * written), written in one transaction, and their workflows started: those whose dependencies are
     * all verified run at once, the others when those are. `waitForGraph`, `baton status` and
     * `baton graphs` count them.
     */
    async addTasks(
      graphId: string,
      input: unknown,
      actor: string,
      parseOptions?: Parameters<typeof parseGraphSpec>[1],
    ): Promise<{ taskId: string; status: TaskStatus }[]> {
      const graph = await graphRead(db, graphId);
      const existing = await graphReadTasks(db, graphId);
      const added = parseGraphAddition({ ...graph, tasks: existing }, (input as { tasks?: unknown } | null)?.tasks, parseOptions);
      const tasks = await graphAddTasks(db, graphId, actor, added);
      for (const task of tasks) await workflows.rerunTask(task.taskId, graph.policy);
      return tasks;
    },

    /**
     * Sends a verified, stale or failed task round again on its dependencies' current revisions
     * and starts its lifecycle workflow. When it is verified at a new revision, dependents
     * verified against the old one become stale (and theirs, transitively); the graph's policy
     * `onUpstreamChange` re-runs them (`rerun`, the default) or leaves them for a rerun like this (`mark`).
     */
    async rerunTask(taskId: string, actor: string, reason: string): Promise<void> {
      const task = await taskRead(db, taskId);
      const graph = await graphRead(db, task.graphId);
      await taskSetStatus(db, { taskId, actor, to: 'ready', kind: 'rerun_requested', reason });
      await workflows.rerunTask(taskId, graph.policy);
    },

    /**
     * Cancels every unfinished task of a graph: records each as cancelled with `actor` and
     * `reason` (an owner's late writes are then refused), then cancels their workflows (and the
     * graph's own, for a graph an earlier baton submitted), so Temporal cancels their runs and each
     * run kills its agent's process group (and, under a per-run uid, every process of that uid). A
     * task being verified is left to finish.
     */
    async cancelGraph(graphId: string, actor: string, reason: string): Promise<CancelOutcome> {
      const outcome = await cancelTasks(await graphReadTasks(db, graphId), actor, reason);
      await workflows.cancelGraph(graphId);
      return outcome;
    },

    /** Cancels one task as `cancelGraph` cancels each of a graph's; its dependents stay blocked. */
    async cancelTask(taskId: string, actor: string, reason: string): Promise<CancelOutcome> {
      return cancelTasks([await taskRead(db, taskId)], actor, reason);
    },

    /**
     * U11: decides the approval a task awaits (`approved`, or `rejected` with a reason), as `actor`
     * (never its agent): recorded as its verification, then its workflow is told. An approval
     * releases its dependents; a rejection leaves the graph's onVerificationFailure policy to act.
     * `workflowTold` false: Temporal did not answer; the decision stands, and the workflow finds
     * it at its next look (within 5 minutes).
     */
    async decideApproval(
      taskId: string,
      actor: string,
      decision: 'approved' | 'rejected',
      reason?: string,
    ): Promise<VerificationOutcome & { workflowTold: boolean }> {
      const outcome = await approvalDecide(db, { taskId, actor, decision, reason });
      const workflowTold = await workflows.recheckTask(taskId).then(
        () => true,
        () => false,
      );
      return { ...outcome, workflowTold };
    },

    /** U11: the approvals waiting for a decision, oldest first. */
    approvals: (): Promise<Approval[]> => approvalList(db),

    /** U11: at most `maxRunning` of `pool`'s tasks run at once, across every graph (null: no limit), as `actor` sets it. */
    limitPool: (pool: string, maxRunning: number | null, actor: string): Promise<number | null> =>
      poolLimitSet(db, pool, maxRunning, actor),

    /** U11: subtasks agents proposed that wait for an operator (with `all`, decided ones too), oldest first. */
    proposals: (filter: { graphId?: string; all?: boolean } = {}): Promise<Proposal[]> => proposalList(db, filter),

    /**
     * U11: accepts the waiting proposal `id` as `actor` (never the agent that proposed it): its
     * subtasks are added to the graph, validated again by the store (a key taken since is refused,
     * nothing added), and their workflows started; or declines it with a reason its agent reads.
     */
    async decideProposal(
      id: number,
      actor: string,
      accept: boolean,
      reason?: string,
    ): Promise<Proposal & { added: { taskId: string; status: TaskStatus }[] }> {
      const { policy, ...decided } = await proposalDecide(db, { id, actor, accept, reason });
      if (policy) for (const task of decided.added) await workflows.rerunTask(task.taskId, policy);
      return decided;
    },

    /**
     * Resolves when nothing more happens in the graph without someone: its state (as `graphs` gives
     * it) is verified, failed, cancelled, stale or blocked. Says which tasks were verified, failed
     * (or were cancelled), are stale, and are left blocked. It follows the graph's task workflows
     * through Temporal (each awaited until it ends, then the dependents it released), so it answers
     * as soon as the last one ends, and looks at Postgres again when none is left to await. `signal`
     * gives up the wait (rejecting with its reason); the graph goes on.
     */
    async waitForGraph(graphId: string, options: { signal?: AbortSignal } = {}): Promise<GraphOutcome> {
      const { signal } = options;
      let last: string | undefined;
      let lastReadAt = 0;
      let pauseMs = 0;
      for (;;) {
        await pause(lastReadAt + pauseMs - Date.now(), signal);
        signal?.throwIfAborted();
        lastReadAt = Date.now();
        const { state, taskIds } = await graphProgress(db, graphId);
        if (GRAPH_ENDED.has(state)) return graphOutcome(graphId, taskIds);
        // Looked at again at once after a change; while nothing changes (say a released task's
        // workflow is not started yet), less and less often.
        const now = JSON.stringify(taskIds);
        pauseMs = now === last ? Math.min(Math.max(pauseMs * 2, WAIT_PAUSE_MIN_MS), WAIT_PAUSE_MAX_MS) : WAIT_PAUSE_MIN_MS;
        last = now;
        await followTaskWorkflows(
          temporal,
          [...ACTIVE_STATUSES].flatMap((status) => taskIds[status] ?? []),
          signal,
        );
      }
    },

    /**
     * Graphs newest first, each with its task count, how many tasks are in each status and its state
     * (GRAPH_STATES); `filter` narrows them by state and age and caps how many (default 50).
     */
    graphs: (filter: GraphListFilter = {}): Promise<GraphSummary[]> => graphList(db, filter),
    /** The graph as submitted (its policy with defaults filled in); NotFoundError when it does not exist. */
    graph: (graphId: string): Promise<GraphSpec> => graphRead(db, graphId),
    graphTasks: (graphId: string): Promise<TaskRow[]> => graphReadTasks(db, graphId),
    task: (taskId: string): Promise<TaskRow> => taskRead(db, taskId),

    /** The ownership timeline of a task, or of every task of a graph. */
    events(id: string, options: { afterId?: number } = {}): Promise<TaskEvent[]> {
      return isTaskId(id) ? eventRead(db, 'task', id, options) : eventRead(db, 'graph', id, { ...options, includeGraphTasks: true });
    },
  };
}

export type BatonClient = ReturnType<typeof createBatonClient>;

/** What `waitForGraph` resolves to: the graph's tasks by where they ended. */
export interface GraphOutcome {
  graphId: string;
  verified: string[];
  /** Failed or cancelled. */
  failed: string[];
  /** Left stale (T8): by the policy `mark`, or until their upstream tasks are verified again. */
  stale: string[];
  /** Never released, because an upstream task failed, was cancelled or is stale (they stay blocked, SPEC D4). */
  blocked: string[];
}

/** Graph states in which nothing more happens without someone (GRAPH_STATES). */
const GRAPH_ENDED: ReadonlySet<GraphState> = new Set(['verified', 'failed', 'cancelled', 'stale', 'blocked']);
/** Statuses of a task whose workflow is at work (or awaits a person): what `waitForGraph` awaits. */
const ACTIVE_STATUSES: ReadonlySet<TaskStatus> = new Set(['ready', 'running', 'submitted', 'verifying', 'rejected', 'awaiting_approval']);
/** How many task workflows `waitForGraph` awaits at once. */
const AWAITED_AT_ONCE = 32;
/** The pauses of `waitForGraph` between its looks at Postgres: the shortest, and the longest while nothing changes. */
const WAIT_PAUSE_MIN_MS = 100;
const WAIT_PAUSE_MAX_MS = 2_000;

function graphOutcome(graphId: string, taskIds: Partial<Record<TaskStatus, string[]>>): GraphOutcome {
  const ids = (...statuses: TaskStatus[]) => statuses.flatMap((status) => taskIds[status] ?? []).sort();
  const ended: TaskStatus[] = ['verified', 'failed', 'cancelled', 'stale'];
  return {
    graphId,
    verified: ids('verified'),
    failed: ids('failed', 'cancelled'),
    stale: ids('stale'),
    blocked: ids(...TASK_STATUSES.filter((status) => !ended.includes(status))),
  };
}

/**
 * Awaits the lifecycle workflow of each of `taskIds` until it ends, and then those of the dependents
 * it released (whose workflows it started before it ended), AWAITED_AT_ONCE at a time. A workflow not
 * started yet, or one that failed, is passed over: the caller looks at Postgres. An abort of `signal`
 * ends every wait.
 */
async function followTaskWorkflows(temporal: Client, taskIds: string[], signal: AbortSignal | undefined): Promise<void> {
  const queue = [...taskIds];
  const seen = new Set(queue);
  // One listener on the caller's signal however many waits are open; each wait listens to this one.
  const stop = new AbortController();
  setMaxListeners(AWAITED_AT_ONCE, stop.signal);
  const onAbort = () => stop.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const released = async (taskId: string): Promise<string[]> => {
    if (stop.signal.aborted) return [];
    // Temporal's client adds a listener to the signal of each call it makes and never takes it off
    // (one per long poll of the history): each wait has a signal of its own, dropped with it, so a
    // graph's thousands of waits do not pile listeners onto one.
    const wait = new AbortController();
    setMaxListeners(0, wait.signal); // one per long poll while the task runs, however long
    const onStop = () => wait.abort(stop.signal.reason);
    stop.signal.addEventListener('abort', onStop, { once: true });
    const handle = temporal.workflow.getHandle(taskWorkflowId(taskId));
    const result: Promise<TaskWorkflowResult> = temporal.withAbortSignal(wait.signal, () => handle.result());
    return result
      .then(
        (result) => result.released ?? [],
        () => [],
      )
      .finally(() => stop.signal.removeEventListener('abort', onStop));
  };
  let awaiting = 0;
  await new Promise<void>((resolve) => {
    const next = () => {
      while (awaiting < AWAITED_AT_ONCE && queue.length > 0) {
        const taskId = queue.shift()!;
        awaiting++;
        void released(taskId).then((ids) => {
          for (const id of ids) {
            if (seen.has(id)) continue;
            seen.add(id);
            queue.push(id);
          }
          awaiting--;
          next();
        });
      }
      if (awaiting === 0) resolve();
    };
    next();
  }).finally(() => signal?.removeEventListener('abort', onAbort));
}

function sameGraph(stored: GraphSpec, submitted: GraphSpec): boolean {
  const { id, repo, base, policy, tasks } = stored;
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown; // drops undefined fields
  return isDeepStrictEqual(plain({ id, repo, base, policy, tasks }), plain(submitted));
}
