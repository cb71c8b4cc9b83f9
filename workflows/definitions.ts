// Signals, queries and workflow inputs, importable by clients without pulling in activity code.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import { unprefixedName } from '../src/temporal/batonNames.js';

/**
 * After a run ends without a word (heartbeat timeout) or fails, how soon Temporal starts its next
 * attempt, which recovers the silent claim and claims again: recovery takes heartbeat timeout + this.
 * Short, because it adds to every recovery; a persistent failure still backs off to 10 s between
 * attempts. (A Temporal server fires a timer no sooner than its `history.timerProcessorMaxTimeShift`
 * after it is set: 1 s by default, 100 ms on `baton dev`'s.)
 */
export const RUN_RETRY_INTERVAL_MS = 200;

/**
 * Tells a task's workflow to look at its task again now rather than at its next poll, or rather than
 * end on what it last saw: an upstream task was verified, releasing this one or leaving it stale (T8).
 */
export const recheckTaskSignal = defineSignal('batonRecheckTask');

/**
 * recheckTaskSignal under baton 0.1's name (`recheckTask`), which executions started by 0.1 still
 * send; handled as long as those may run (workflows/index.ts says when that ends).
 */
export const recheckTaskSignalUnprefixed = defineSignal(unprefixedName(recheckTaskSignal.name));

export interface TaskWorkflowInput {
  taskId: string;
  policy: GraphPolicy;
  /**
   * This lifecycle runs outside its graph's workflow (a rerun): once verified, it starts (or wakes)
   * the workflows of the dependents it released, which the graph's workflow will not. (Default: false)
   */
  wakeDependents?: boolean;
  /**
   * Postgres made the task ready just before this workflow was started (the graph's workflow starts
   * exactly those): the claim is the first look, with no read before it. A claim refused (the task
   * moved on, or has no attempts left) sends the workflow back to reading. (Default: false)
   */
  ready?: boolean;
  /** Carried over continue-as-new: the dependents this lifecycle's verifications released so far. */
  released?: string[];
  /** Carried over continue-as-new: the task awaited a person's approval (U11), whose decision released its dependents. (Default: false) */
  awaitedApproval?: boolean;
  /** The namespace has baton's search attributes (src/temporal/searchAttributes.ts): set them. (Default: false) */
  searchAttributes?: boolean;
}

export interface TaskWorkflowResult {
  taskId: string;
  /** `stale`: left stale by the graph's policy (`mark`), or until its upstream tasks are verified again. */
  status: 'verified' | 'failed' | 'cancelled' | 'stale';
  revision?: string;
  attempts: number;
  /**
   * When verified: the dependents its verifications released, as verification_record named them;
   * the graph's workflow starts exactly these. (Absent from results recorded before it did)
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
