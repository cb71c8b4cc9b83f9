import type { Client } from '@temporalio/client';
import { TASK_QUEUE_DEFAULT } from './config.js';
import type { Queryable } from './db/queryable.js';
import { selectEvents } from './db/sql/selectEvents.js';
import { selectGraphTasks, selectTask } from './db/sql/selectTasks.js';
import { submitGraph } from './db/sql/submitGraph.js';
import { parseGraphSpec, type GraphSpec } from './tasks/graphSpec.js';
import type { TaskEvent, TaskRow } from './tasks/types.js';
import { graphWorkflowId, type GraphWorkflowInput, type GraphWorkflowResult } from '../workflows/definitions.js';
import type { graphWorkflow } from '../workflows/graphWorkflow.js';

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
  return {
    /**
     * Validates a graph (unknown dependency, cycle, duplicate key, size limits: InvalidInputError,
     * nothing written), writes it atomically and starts its workflow.
     */
    async submitGraph(input: unknown, submittedBy: string, parseOptions?: Parameters<typeof parseGraphSpec>[1]): Promise<GraphSpec> {
      const graph = parseGraphSpec(input, parseOptions);
      await submitGraph(db, graph, submittedBy);
      const byKey = (key: string) => `${graph.id}/${key}`;
      const workflowInput: GraphWorkflowInput = {
        graphId: graph.id,
        policy: graph.policy,
        tasks: graph.tasks.map((t) => ({ taskId: byKey(t.key), dependsOn: t.dependsOn.map(byKey) })),
      };
      await temporal.workflow.start<typeof graphWorkflow>('graphWorkflow', {
        taskQueue,
        workflowId: graphWorkflowId(graph.id),
        args: [workflowInput],
      });
      return graph;
    },

    /** Resolves when the graph's workflow ends: which tasks were verified, failed or left blocked. */
    waitForGraph(graphId: string): Promise<GraphWorkflowResult> {
      return temporal.workflow.getHandle<typeof graphWorkflow>(graphWorkflowId(graphId)).result();
    },

    graphTasks: (graphId: string): Promise<TaskRow[]> => selectGraphTasks(db, graphId),
    task: (taskId: string): Promise<TaskRow> => selectTask(db, taskId),

    /** The ownership timeline of a task, or of every task of a graph. */
    events(id: string, options: { afterId?: number } = {}): Promise<TaskEvent[]> {
      return id.includes('/')
        ? selectEvents(db, 'task', id, options)
        : selectEvents(db, 'graph', id, { ...options, includeGraphTasks: true });
    },
  };
}

export type BatonClient = ReturnType<typeof createBatonClient>;
