import { InvalidInputError, mapDatabaseErrors } from '../../errors.js';
import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { Queryable } from '../queryable.js';

/** T8: writes a validated graph atomically; a duplicate graph id fails and writes nothing. */
export function submitGraph(db: Queryable, graph: GraphSpec, actor: string): Promise<number> {
  return mapDatabaseErrors(async () => {
    const tasks = graph.tasks.map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }));
    const { rows } = await db
      .query<{ count: number }>('SELECT baton.submit_graph($1, $2, $3, $4) AS count', [graph.id, actor, graph, JSON.stringify(tasks)])
      .catch((error: { code?: string; constraint?: string }) => {
        if (error.code === '23505' && error.constraint === 'graphs_pkey') throw new InvalidInputError(`graph ${graph.id} already exists`);
        throw error;
      });
    return rows[0]!.count;
  });
}
