import { createHealthCheckActivities } from './healthCheck.js';
import { createObjectActivities } from './objects.js';
import { createTaskActivities, type TaskActivityDeps } from './tasks.js';

export type ActivityDeps = TaskActivityDeps;

/**
 * Builds baton's activities around their dependencies. Register the result in any worker:
 * `Worker.create({ activities: createActivities(deps), ... })`; tests spread it and override one.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createHealthCheckActivities(deps),
    ...createTaskActivities(deps),
    // Objects are written as this worker: the same configured identity that owns its claims.
    ...createObjectActivities({ db: deps.db, actor: deps.identity }),
  };
}

export type BatonActivities = ReturnType<typeof createActivities>;
