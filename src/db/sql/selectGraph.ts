import { mapDatabaseErrors, NotFoundError } from '../../errors.js';
import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { Queryable } from '../queryable.js';

/** The graph as submitted; NotFoundError when it does not exist. */
export function selectGraph(db: Queryable, graphId: string): Promise<GraphSpec & { submittedBy: string; submittedAt: string }> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query('SELECT spec, submitted_by, submitted_at FROM baton.graphs WHERE id = $1', [graphId]);
    if (!rows[0]) throw new NotFoundError(`graph ${graphId} does not exist`);
    return { ...rows[0].spec, submittedBy: rows[0].submitted_by, submittedAt: rows[0].submitted_at.toISOString() };
  });
}
