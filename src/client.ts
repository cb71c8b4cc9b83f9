import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@temporalio/client';
import { TASK_QUEUE_DEFAULT } from './config.js';
import type { Queryable } from './db/queryable.js';
import { graphAddTasks, proposalDecide, proposalList, taskSetStatus, graphSubmit } from './db/sql/graphs.js';
import { poolLimitSet } from './db/sql/poolRuns.js';
import { eventRead, graphList, graphRead, graphReadTasks, taskRead, type GraphListFilter } from './db/sql/reads.js';
import { approvalDecide, approvalList, type VerificationOutcome } from './db/sql/verification.js';
import { IllegalTransitionError, InvalidInputError } from './errors.js';
import { parseGraphAddition, parseGraphSpec, type GraphSpec } from './tasks/graphSpec.js';
import { TERMINAL_STATUSES, type TaskStatus } from './tasks/states.js';
import type { Approval, GraphSummary, Proposal, TaskEvent, TaskRow } from './tasks/types.js';
import { graphWorkflowId, isTaskId, taskIdOf } from './tasks/taskId.js';
import { startWithSearchAttributes } from './temporal/registerSearchAttributes.js';
import { graphPriority } from './temporal/priority.js';
import { GRAPH_ID_ATTRIBUTE } from './temporal/searchAttributes.js';
import { workflowControl } from './workflowControl.js';
import { type GraphWorkflowInput, type GraphWorkflowResult } from '../workflows/definitions.js';
import type { batonGraphWorkflow } from '../workflows/graphWorkflow.js';

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
 * (status, owners, versions, events), Temporal to start and await the graph's workflow.
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
     * and starts its workflow.
     */
    async submitGraph(input: unknown, submittedBy: string, parseOptions?: Parameters<typeof parseGraphSpec>[1]): Promise<GraphSpec> {
      const graph = parseGraphSpec(input, parseOptions);
      try {
        await graphSubmit(db, graph, submittedBy);
      } catch (error) {
        // The same graph again (say its workflow failed to start last time): start it, once.
        const existing = error instanceof InvalidInputError ? await graphRead(db, graph.id).catch(() => undefined) : undefined;
        if (!existing || !sameGraph(existing, graph)) throw error;
      }
      const byKey = (key: string) => taskIdOf(graph.id, key);
      await startWithSearchAttributes(temporal, (searchAttributes) => {
        const workflowInput: GraphWorkflowInput = {
          graphId: graph.id,
          policy: graph.policy,
          tasks: graph.tasks.map((t) => ({ taskId: byKey(t.key), dependsOn: t.dependsOn.map(byKey) })),
          ...(searchAttributes && { searchAttributes }),
        };
        return temporal.workflow.start<typeof batonGraphWorkflow>('batonGraphWorkflow', {
          taskQueue,
          workflowId: graphWorkflowId(graph.id),
          args: [workflowInput],
          ...(searchAttributes && { typedSearchAttributes: [{ key: GRAPH_ID_ATTRIBUTE, value: graph.id }] }),
          priority: graphPriority(graph.id, graph.policy),
          workflowIdConflictPolicy: 'USE_EXISTING',
        });
      });
      return graph;
    },

    /**
     * U11: adds tasks to the running graph `graphId`, as `actor`: `input` is a mapping with a `tasks`
     * list as a graph file has it, each depending on tasks of the graph or on others added with it.
     * They are validated with the graph's own (one InvalidGraphError naming every problem, nothing
     * written), written in one transaction, and their workflows started: those whose dependencies are
     * all verified run at once, the others when those are. The graph's own workflow does not wait
     * for them; `baton status` and `baton graphs` count them.
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
     * `reason` (an owner's late writes are then refused), then cancels the graph's workflow and
     * theirs, so Temporal cancels their runs and each run kills its agent's process group (and,
     * under a per-run uid, every process of that uid). A task being verified is left to finish.
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

    /** Resolves when the graph's workflow ends: which tasks were verified, failed or left blocked. */
    waitForGraph(graphId: string): Promise<GraphWorkflowResult> {
      return temporal.workflow.getHandle<typeof batonGraphWorkflow>(graphWorkflowId(graphId)).result();
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

function sameGraph(stored: GraphSpec, submitted: GraphSpec): boolean {
  const { id, repo, base, policy, tasks } = stored;
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown; // drops undefined fields
  return isDeepStrictEqual(plain({ id, repo, base, policy, tasks }), plain(submitted));
}
