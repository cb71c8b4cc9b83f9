import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

/** The graph as submitted; NotFoundError when it does not exist. */
export async function selectGraph(db: Queryable, graphId: string): Promise<GraphSpec & { submittedBy: string; submittedAt: string }> {
  const [row] = await callStore<{ spec: GraphSpec; submitted_by: string; submitted_at: Date }>(db, 'graph_read', [graphId]);
  return { ...row!.spec, submittedBy: row!.submitted_by, submittedAt: row!.submitted_at.toISOString() };
}
