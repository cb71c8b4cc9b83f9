// The agent API's dispatcher: an operation, its validated arguments and the caller's token become
// a store call (src/api/agentDoor.ts), or a tool call and progress for the run an endpoint serves,
// or (the operator's cancel, rerun, additions and approval decisions) a store call then Temporal's part; long polls wait here.
// Tokens, rates and input are checked before it is called (src/api/agentApi.ts).
import type { Queryable } from '../db/queryable.js';
import { InvalidInputError, TemporalUnavailableError } from '../errors.js';
import { parseGraphAddition, parseSubtasks, type GraphPolicy } from '../tasks/graphSpec.js';
import { graphWorkflowsQuery, taskWorkflowId } from '../tasks/taskId.js';
import type { ToolCallInput, ToolCallResult } from '../tools/types.js';
import { agentCall, agentOperations } from './agentDoor.js';
import { ForbiddenError } from './errors.js';
import type { OperationName } from './operationNames.js';
import type { AgentApiResult } from './operationResults.js';
import { newTokenSecret, secretSha256 } from './tokenSecret.js';
import { pause } from '../pause.js';

type CancelOutcome = AgentApiResult<'task.cancel'>;

/** How often a waiting `pool.claim` looks for work, and a waiting `events.list` or `inbox.wait` for events. */
const POLL_MS = 500;

/** The run a run's own endpoint serves: its claim, its tool calls, its agent's progress. */
export interface LocalRun {
  taskId: string;
  claimVersion: number;
  /** Tool calls through the worker's gateway, fenced on this claim. Absent: the worker has no tools. */
  callTool?(call: ToolCallInput): Promise<ToolCallResult>;
  /** Progress the agent reported; the runner adds it to its own heartbeats. */
  reportProgress(progress: Record<string, unknown>): void;
}

/** Performs `operation` with arguments already validated, as the token `secret`; `signal` tells that its caller has gone. */
type Dispatch = (secret: string, operation: OperationName, args: Record<string, unknown>, signal?: AbortSignal) => Promise<unknown>;

/** What the operator's actions ask of Temporal once the store has recorded them (src/workflowControl.ts). */
export interface WorkflowControl {
  /** Cancels a task's lifecycle workflow; one that never started or has ended needs nothing. */
  cancelTask(taskId: string): Promise<void>;
  /** Cancels the workflow an earlier baton started for a graph, as `cancelTask` does a task's (later graphs have none). */
  cancelGraph(graphId: string): Promise<void>;
  /** Starts a task's lifecycle workflow for a rerun, or finds the one running. */
  rerunTask(taskId: string, policy: GraphPolicy): Promise<void>;
  /** Tells a task's lifecycle workflow to look at its task now (a decision on its approval); one that has ended needs nothing. */
  recheckTask(taskId: string): Promise<void>;
}

/** What the dispatcher serves besides the store: a run's own endpoint, or Temporal for the operator's actions. */
export interface DispatchOptions {
  localRun?: LocalRun;
  /**
   * Temporal, for the actions that start or stop workflows (task.cancel, graph.cancel, task.rerun,
   * graph.add, task.propose, proposal.accept): dialled on the first. Absent: they are refused before
   * anything is recorded (a server told of no Temporal). A run's endpoint has its worker's.
   */
  workflows?: () => Promise<WorkflowControl>;
}

/** Calls `attempt` until it answers something `found` accepts, `waitSeconds` pass or the caller goes; the last answer. */
async function waitFor<T>(
  waitSeconds: number | undefined,
  signal: AbortSignal | undefined,
  attempt: () => Promise<T>,
  found: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + (waitSeconds ?? 0) * 1000;
  let value = await attempt();
  while (!found(value) && Date.now() < deadline && !signal?.aborted) {
    await pause(Math.min(POLL_MS, Math.max(0, deadline - Date.now())), signal);
    // A caller that has gone away is asked nothing more (pool.claim would hand it a run nobody receives).
    if (signal?.aborted) break;
    value = await attempt();
  }
  return value;
}

export function createDispatch(db: Queryable, options: DispatchOptions = {}): Dispatch {
  const { localRun } = options;
  async function callTool(secret: string, call: ToolCallInput): Promise<ToolCallResult> {
    const run = (await agentCall(db, secret, 'tool.call', {})) as { taskId: string; claimVersion: number };
    if (!localRun)
      throw new InvalidInputError(
        'tool calls are made on the worker that runs the claim: use the endpoint your run gives you ($BATON_URL inside a run); a pooled run has none',
      );
    if (run.taskId !== localRun.taskId || run.claimVersion !== localRun.claimVersion) {
      throw new ForbiddenError('other_run', `this endpoint serves claim version ${localRun.claimVersion} of task ${localRun.taskId} only`);
    }
    if (!localRun.callTool) throw new InvalidInputError("this run's worker has no tools configured");
    return localRun.callTool({
      tool: call.tool,
      step: call.step,
      params: call.params ?? null,
      ...(call.preconditions && { preconditions: call.preconditions }),
    });
  }

  async function claimFromPool(secret: string, args: { pool: string; waitSeconds?: number }, signal?: AbortSignal): Promise<unknown> {
    // A caller that has gone away must not be handed a run nobody would receive.
    if (signal?.aborted) return null;
    return waitFor(
      args.waitSeconds,
      signal,
      async () => {
        // A fresh secret per attempt: only the one handed out is ever stored, as its hash.
        const runToken = newTokenSecret();
        const run = await agentCall(db, secret, 'pool.claim', { pool: args.pool, runSecretSha256: secretSha256(runToken) });
        return run ? { ...(run as object), runToken } : null;
      },
      (run) => run !== null,
    );
  }

  /** Temporal, for an operator's action, before anything is recorded: refused when this server has none or it does not answer. */
  async function temporalFor(operation: OperationName): Promise<WorkflowControl> {
    if (!options.workflows) {
      throw new ForbiddenError(
        'no_temporal',
        `${operation} needs the Temporal server the workers use, and this server was given none (TEMPORAL_ADDRESS, or baton dev's): nothing was done`,
      );
    }
    return options.workflows().catch((error: unknown) => {
      throw new TemporalUnavailableError(operation, false, error);
    });
  }

  /** Temporal's part of an action the store has recorded; its failure says the change was recorded. */
  const startedOrUnavailable = (operation: OperationName, step: () => Promise<void>) =>
    step().catch((error: unknown) => {
      throw new TemporalUnavailableError(operation, true, error);
    });

  /**
   * task.cancel, graph.cancel, task.rerun: the token's scope first (a token that may not act is
   * refused, and recorded, whatever this server reaches), then Temporal is dialled, then the store
   * records the change as the token's identity, then Temporal carries it out.
   */
  async function operate(secret: string, operation: 'task.cancel' | 'graph.cancel' | 'task.rerun', args: Record<string, unknown>) {
    // agent_call refuses (and records) what agent_operations leaves out, before it acts.
    if (!(await agentOperations(db, secret, [operation])).length) return agentCall(db, secret, operation, args);
    const workflows = await temporalFor(operation);
    const carryOut = (step: () => Promise<void>) => startedOrUnavailable(operation, step);
    if (operation === 'task.rerun') {
      const { taskId, policy } = (await agentCall(db, secret, operation, args)) as { taskId: string; policy: GraphPolicy };
      await carryOut(() => workflows.rerunTask(taskId, policy));
      return { taskId };
    }
    const outcome = (await agentCall(db, secret, operation, args)) as CancelOutcome;
    // Those cancelled before (an earlier call whose Temporal step failed) are asked again: it changes nothing once done.
    const cancelled = [...outcome.cancelled, ...outcome.left.filter((t) => t.status === 'cancelled').map((t) => t.taskId)];
    await carryOut(async () => {
      for (const taskId of cancelled) await workflows.cancelTask(taskId);
      if (operation === 'graph.cancel') await workflows.cancelGraph(String(args.graphId));
    });
    return outcome;
  }

  /**
   * task.approve, task.reject (U11): the store records the decision, then the task's workflow is
   * told at once where this server reaches Temporal; where it does not, or Temporal does not answer,
   * the decision stands and the workflow finds it at its next look (within 5 minutes).
   */
  async function decide(secret: string, operation: 'task.approve' | 'task.reject', args: Record<string, unknown>) {
    const decided = (await agentCall(db, secret, operation, args)) as AgentApiResult<typeof operation>;
    if (options.workflows) {
      await options
        .workflows()
        .then((workflows) => workflows.recheckTask(decided.taskId))
        .catch(() => {});
    }
    return decided;
  }

  /**
   * Operations that add tasks to a graph (U11): graph.add, task.propose, proposal.accept. The
   * token's scope and Temporal first, as for the operator's other actions; then `args` as `prepare`
   * makes them (validated, never trusted to the store alone); then the store adds the tasks as the
   * token's identity (or keeps them for an operator), and Temporal starts the workflows of those added.
   */
  async function addTasks<Op extends 'graph.add' | 'task.propose' | 'proposal.accept'>(
    secret: string,
    operation: Op,
    args: Record<string, unknown>,
    prepare: (secret: string, args: Record<string, unknown>) => Promise<Record<string, unknown>> = async (_, a) => a,
  ): Promise<AgentApiResult<Op>> {
    if (!(await agentOperations(db, secret, [operation])).length)
      return agentCall(db, secret, operation, args) as Promise<AgentApiResult<Op>>;
    const workflows = await temporalFor(operation);
    // The store answers with the graph's policy, which the added tasks' workflows run under.
    const { policy, ...outcome } = (await agentCall(db, secret, operation, await prepare(secret, args))) as AgentApiResult<Op> & {
      policy: GraphPolicy;
    };
    await startedOrUnavailable(operation, async () => {
      for (const task of outcome.added) await workflows.rerunTask(task.taskId, policy);
    });
    return outcome as unknown as AgentApiResult<Op>;
  }

  /** graph.add: the tasks validated with the graph's own (the graph as graph.show reads it), as {key, spec, dependsOn}. */
  async function validatedAddition(secret: string, args: Record<string, unknown>) {
    const graph = (await agentCall(db, secret, 'graph.show', { graphId: args.graphId })) as AgentApiResult<'graph.show'>;
    const policy = graph.policy as unknown as GraphPolicy;
    const tasks = parseGraphAddition({ ...graph, policy }, args.tasks).map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }));
    return { graphId: args.graphId, tasks };
  }

  /** task.propose: the subtasks as the agent names them (key, description, payload, dependencies); the store gives them the rest of their proposer's spec. */
  const validatedProposal = async (_: string, args: Record<string, unknown>) => ({ tasks: parseSubtasks(args.tasks) });

  return async (secret, operation, args, signal) => {
    switch (operation) {
      case 'tool.call':
        return callTool(secret, args as unknown as ToolCallInput);
      case 'heartbeat': {
        const beat = (await agentCall(db, secret, 'heartbeat', args)) as { taskId: string; pooled: boolean; claimVersion: number };
        const thisRun = localRun && beat.taskId === localRun.taskId && beat.claimVersion === localRun.claimVersion;
        if (thisRun && !beat.pooled && args.progress) localRun.reportProgress(args.progress as Record<string, unknown>);
        return beat;
      }
      case 'pool.claim':
        return claimFromPool(secret, args as { pool: string; waitSeconds?: number }, signal);
      case 'events.list': {
        const { waitSeconds, ...read } = args as { waitSeconds?: number; afterId?: number };
        return waitFor(
          read.afterId === undefined ? 0 : waitSeconds,
          signal,
          () => agentCall(db, secret, 'events.list', read) as Promise<{ events: unknown[] }>,
          (page) => page.events.length > 0,
        );
      }
      case 'inbox.wait': {
        const { waitSeconds, ...read } = args as { waitSeconds?: number };
        return waitFor(
          waitSeconds,
          signal,
          () => agentCall(db, secret, 'inbox.wait', read) as Promise<{ items: unknown[] }>,
          (page) => page.items.length > 0,
        );
      }
      case 'graph.show': {
        const graph = (await agentCall(db, secret, operation, args)) as { id: string };
        return { ...graph, workflowsQuery: graphWorkflowsQuery(graph.id) };
      }
      case 'task.show': {
        const task = (await agentCall(db, secret, operation, args)) as { id: string };
        return { ...task, workflowId: taskWorkflowId(task.id) };
      }
      case 'task.cancel':
      case 'graph.cancel':
      case 'task.rerun':
        return operate(secret, operation, args);
      case 'task.approve':
      case 'task.reject':
        return decide(secret, operation, args);
      case 'graph.add':
        return addTasks(secret, operation, args, validatedAddition);
      case 'task.propose':
        return addTasks(secret, operation, args, validatedProposal);
      case 'proposal.accept':
        return addTasks(secret, operation, args);
      default:
        return agentCall(db, secret, operation, args);
    }
  };
}
