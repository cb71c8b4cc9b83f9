import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

/** Where a graph's runs work (repo, base), without loading its spec; NotFoundError when it does not exist. */
export async function selectGraphSource(db: Queryable, graphId: string): Promise<{ repo?: string; base: string }> {
  const [row] = await callStore<{ repo: string | null; base: string }>(db, 'graph_read_source', [graphId]);
  return { ...(row!.repo === null ? {} : { repo: row!.repo }), base: row!.base };
}
