import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { Queryable } from '../queryable.js';
import { callStoreValue } from '../storeCall.js';

/** T8: writes a validated graph atomically; a duplicate graph id fails (InvalidInputError) and writes nothing. */
export function submitGraph(db: Queryable, graph: GraphSpec, actor: string): Promise<number> {
  const tasks = graph.tasks.map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }));
  return callStoreValue<number>(db, 'graph_submit', [graph.id, actor, graph, JSON.stringify(tasks)]);
}
