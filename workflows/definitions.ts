// Signals, queries and workflow results, importable by clients without pulling in activity code
// (a task workflow's input and its signal's name: src/temporal/taskWorkflowContract.ts).
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import { unprefixedName } from '../src/temporal/batonNames.js';
import { RECHECK_TASK_SIGNAL } from '../src/temporal/taskWorkflowContract.js';

/**
 * After a run ends without a word (heartbeat timeout) or fails, how soon Temporal starts its next
 * attempt, which recovers the silent claim and claims again: recovery takes heartbeat timeout + this.
 * Short, because it adds to every recovery; a persistent failure still backs off to 10 s between
 * attempts. (A Temporal server fires a timer no sooner than its `history.timerProcessorMaxTimeShift`
 * after it is set: 1 s by default, 100 ms on `baton dev`'s.)
 */
export const RUN_RETRY_INTERVAL_MS = 200;

/** Tells a task's workflow to look at its task again now (RECHECK_TASK_SIGNAL says when). */
export const recheckTaskSignal = defineSignal(RECHECK_TASK_SIGNAL);

/**
 * recheckTaskSignal under baton 0.1's name (`recheckTask`), which executions started by 0.1 still
 * send; handled as long as those may run (workflows/index.ts says when that ends).
 */
export const recheckTaskSignalUnprefixed = defineSignal(unprefixedName(recheckTaskSignal.name));

export interface TaskWorkflowResult {
  taskId: string;
  /** `stale`: left stale by the graph's policy (`mark`), or until its upstream tasks are verified again. */
  status: 'verified' | 'failed' | 'cancelled' | 'stale';
  revision?: string;
  attempts: number;
  /**
   * When verified: the dependents its verifications released, as verification_record named them,
   * whose workflows it (or its graph's, for a graph of an earlier baton) started; a client awaiting
   * the graph awaits these next. (Absent from results recorded before it did)
   */
  released?: string[];
}

export interface GraphWorkflowInput {
  graphId: string;
  tasks: Array<{ taskId: string; dependsOn: string[] }>;
  policy: GraphPolicy;
  /** The namespace has baton's search attributes: the task workflows set theirs. (Default: false) */
  searchAttributes?: boolean;
}

export interface GraphWorkflowResult {
  graphId: string;
  verified: string[];
  failed: string[];
  /** Tasks left stale (T8): by the policy `mark`, or until their upstream tasks are verified again. */
  stale: string[];
  /** Tasks never released because an upstream task failed or is stale (they stay blocked, SPEC D4). */
  blocked: string[];
}

/** The graph workflow's view: task id -> last known lifecycle outcome. */
export const graphProgressQuery = defineQuery<Record<string, string>>('batonGraphProgress');

/** graphProgressQuery under baton 0.1's name (`graphProgress`), for clients of 0.1 querying a graph this code runs. */
export const graphProgressQueryUnprefixed = defineQuery<Record<string, string>>(unprefixedName(graphProgressQuery.name));
