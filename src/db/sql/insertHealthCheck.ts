import type { Queryable } from '../queryable.js';

export interface HealthCheckRow {
  id: number;
  workflowId: string;
  message: string;
  recordedAt: string;
}

/** Records one health check; a retried activity finds its earlier row instead of adding one. */
export async function insertHealthCheck(db: Queryable, workflowId: string, message: string): Promise<HealthCheckRow> {
  const { rows } = await db.query<{ id: number; workflow_id: string; message: string; recorded_at: Date }>(
    `INSERT INTO baton.health_checks (workflow_id, message) VALUES ($1, $2)
     ON CONFLICT (workflow_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id
     RETURNING id, workflow_id, message, recorded_at`,
    [workflowId, message],
  );
  const row = rows[0]!;
  return { id: row.id, workflowId: row.workflow_id, message: row.message, recordedAt: row.recorded_at.toISOString() };
}
