import type { Queryable } from '../src/db/queryable.js';
import { insertHealthCheck, type HealthCheckRow } from '../src/db/sql/insertHealthCheck.js';

export function createHealthCheckActivities(deps: { db: Queryable }) {
  return {
    /** Writes one health-check row keyed by the calling workflow, proving Temporal reaches Postgres. */
    async recordHealthCheck(input: { workflowId: string; message: string }): Promise<HealthCheckRow> {
      return insertHealthCheck(deps.db, input.workflowId, input.message);
    },
  };
}
