import { mapDatabaseErrors, NotFoundError } from '../../errors.js';
import type { Queryable } from '../queryable.js';

/** Where a graph's tasks run and are verified: its repository and base; never loads the whole spec. */
export function selectGraphSource(db: Queryable, graphId: string): Promise<{ repo?: string; base: string }> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<{ repo: string | null; base: string }>('SELECT repo, base FROM baton.graphs WHERE id = $1', [graphId]);
    if (!rows[0]) throw new NotFoundError(`graph ${graphId} does not exist`);
    return { ...(rows[0].repo === null ? {} : { repo: rows[0].repo }), base: rows[0].base };
  });
}
