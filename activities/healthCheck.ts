import type { Queryable } from '../src/db/queryable.js';
import { healthCheckRecord, type HealthCheckRow } from '../src/db/sql/reads.js';

export function createHealthCheckActivities(deps: { db: Queryable }) {
  return {
    /** Writes one health-check row keyed by the calling workflow, proving Temporal reaches Postgres. */
    async batonRecordHealthCheck(input: { workflowId: string; message: string }): Promise<HealthCheckRow> {
      return healthCheckRecord(deps.db, input.workflowId, input.message);
    },
  };
}
