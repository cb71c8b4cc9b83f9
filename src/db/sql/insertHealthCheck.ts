import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

export interface HealthCheckRow {
  id: number;
  workflowId: string;
  message: string;
  recordedAt: string;
}

/** Records one health check; a retried activity finds its earlier row instead of adding one. */
export async function insertHealthCheck(db: Queryable, workflowId: string, message: string): Promise<HealthCheckRow> {
  const [row] = await callStore<{ id: number; workflow_id: string; message: string; recorded_at: Date }>(db, 'health_check_record', [
    workflowId,
    message,
  ]);
  return { id: row!.id, workflowId: row!.workflow_id, message: row!.message, recordedAt: row!.recorded_at.toISOString() };
}
