import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';
import type { HealthCheckRow } from './insertHealthCheck.js';

/** The most recent health checks, newest first. */
export async function selectHealthChecks(db: Queryable, limit = 10): Promise<HealthCheckRow[]> {
  const rows = await callStore<{ id: number; workflow_id: string; message: string; recorded_at: Date }>(db, 'health_check_read', [limit]);
  return rows.map((r) => ({ id: r.id, workflowId: r.workflow_id, message: r.message, recordedAt: r.recorded_at.toISOString() }));
}
