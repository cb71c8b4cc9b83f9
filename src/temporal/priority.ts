// U11: priorities and fairness between graphs, as Temporal's task queues apply them. Every workflow
// of a graph carries the graph's priority and its id as fairness key (children and activities
// inherit both): when workers are short, a backlog is served by priority, then between graphs in
// turn rather than first come first served.
import type { Priority } from '@temporalio/common';
import { PRIORITY_DEFAULT, type GraphPolicy } from '../tasks/graphSpec.js';

/** The priority of the workflows of graph `graphId` under `policy`. */
export function graphPriority(graphId: string, policy: Pick<GraphPolicy, 'priority'>): Priority {
  return { priorityKey: policy.priority ?? PRIORITY_DEFAULT, fairnessKey: graphId };
}
