import type { Queryable } from '../src/db/queryable.js';
import { insertHealthCheck, type HealthCheckRow } from '../src/db/sql/insertHealthCheck.js';

export interface ActivityDeps {
  /** Where baton's state lives; a pool in production, anything `Queryable` in tests. */
  db: Queryable;
}

/**
 * Builds baton's activities around their dependencies. Register the result in any worker:
 * `Worker.create({ activities: createActivities({ db: pool }), ... })`.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    /** Writes one health-check row keyed by the calling workflow, proving Temporal reaches Postgres. */
    async recordHealthCheck(input: { workflowId: string; message: string }): Promise<HealthCheckRow> {
      return insertHealthCheck(deps.db, input.workflowId, input.message);
    },
  };
}

export type BatonActivities = ReturnType<typeof createActivities>;
