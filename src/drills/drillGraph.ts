import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/queryable.js';
import { submitGraph } from '../db/sql/submitGraph.js';
import { parseGraphSpec } from '../tasks/graphSpec.js';

/** Writes a graph of `count` independent tasks (or a chain shape via `dependsOn`) for database-level drills. */
export async function insertDrillGraph(
  db: Queryable,
  prefix: string,
  tasks: Array<{ key: string; dependsOn?: string[] }>,
): Promise<string> {
  const id = `${prefix}-${randomUUID().slice(0, 8)}`;
  await submitGraph(
    db,
    parseGraphSpec({
      id,
      tasks: tasks.map((t) => ({ key: t.key, dependsOn: t.dependsOn ?? [], run: { function: 'drill' }, verify: { function: 'drill' } })),
    }),
    'drill',
  );
  return id;
}
