import type { Queryable } from '../queryable.js';
import type { HealthCheckRow } from './insertHealthCheck.js';

/** The most recent health checks, newest first. */
export async function selectHealthChecks(db: Queryable, limit = 10): Promise<HealthCheckRow[]> {
  const { rows } = await db.query<{ id: number; workflow_id: string; message: string; recorded_at: Date }>(
    'SELECT id, workflow_id, message, recorded_at FROM baton.health_checks ORDER BY id DESC LIMIT $1',
    [limit],
  );
  return rows.map((r) => ({ id: r.id, workflowId: r.workflow_id, message: r.message, recordedAt: r.recorded_at.toISOString() }));
}
