// Signals, queries and workflow inputs, importable by clients without pulling in activity code.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';

/**
 * After a run ends without a word (heartbeat timeout) or fails, how soon Temporal starts its next
 * attempt, which recovers the silent claim and claims again: recovery takes heartbeat timeout + this.
 */
export const RUN_RETRY_INTERVAL_MS = 1_000;

/** Wakes a task workflow started with dependencies once they are all verified (the graph workflow starts each task only when released, so it needs no signal). */
export const dependenciesReleasedSignal = defineSignal('dependenciesReleased');

export interface TaskWorkflowInput {
  taskId: string;
  /** Task ids this task waits for; empty means it starts at once. */
  dependsOn: string[];
  policy: GraphPolicy;
}

export interface TaskWorkflowResult {
  taskId: string;
  status: 'verified' | 'failed' | 'cancelled';
  revision?: string;
  attempts: number;
}

export interface GraphWorkflowInput {
  graphId: string;
  tasks: Array<{ taskId: string; dependsOn: string[] }>;
  policy: GraphPolicy;
}

export interface GraphWorkflowResult {
  graphId: string;
  verified: string[];
  failed: string[];
  /** Tasks never released because an upstream task failed (they stay blocked, SPEC D4). */
  blocked: string[];
}

/** The graph workflow's view: task id -> last known lifecycle outcome. */
export const graphProgressQuery = defineQuery<Record<string, string>>('graphProgress');

/** Workflow id of a task's lifecycle workflow. */
export function taskWorkflowId(taskId: string): string {
  return `baton-task:${taskId}`;
}

/** Workflow id of a graph's workflow. */
export function graphWorkflowId(graphId: string): string {
  return `baton-graph:${graphId}`;
}
