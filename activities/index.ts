import type { Runner } from '../src/runners/types.js';
import { createToolGateway, type ToolGateway } from '../src/tools/toolGateway.js';
import type { ToolAdapter } from '../src/tools/types.js';
import { createHealthCheckActivities } from './healthCheck.js';
import { createObjectActivities } from './objects.js';
import { createTaskActivities, type TaskActivityDeps } from './tasks.js';

export interface ActivityDeps extends TaskActivityDeps {
  /** External tools the agents of this worker may call through the gateway (X1, X2). (Default: none) */
  tools?: Record<string, ToolAdapter>;
}

/**
 * Builds baton's activities around their dependencies. Register the result in any worker:
 * `Worker.create({ activities: createActivities(deps), ... })`; tests spread it and override one.
 */
export function createActivities(deps: ActivityDeps) {
  const gateway = deps.tools && Object.keys(deps.tools).length ? createToolGateway({ db: deps.db, tools: deps.tools }) : undefined;
  const taskDeps: TaskActivityDeps = gateway
    ? { ...deps, runnerFor: (spec) => withToolAccess(deps.runnerFor(spec), gateway, deps.identity) }
    : deps;
  return {
    ...createHealthCheckActivities(deps),
    ...createTaskActivities(taskDeps),
    // Objects are written as this worker: the same configured identity that owns its claims.
    ...createObjectActivities({ db: deps.db, actor: deps.identity }),
  };
}

/**
 * Gives a run `callTool`, bound to its own claim: the owner is this worker's identity (T5) and the
 * claim version the run's, so nothing the agent sends can name another task or owner.
 */
function withToolAccess(runner: Runner, gateway: ToolGateway, identity: string): Runner {
  return {
    ...runner,
    run: (ctx) =>
      runner.run({
        ...ctx,
        callTool: (call) => gateway.call({ taskId: ctx.claim.taskId, owner: identity, claimVersion: ctx.claim.claimVersion }, call),
      }),
  };
}

export type BatonActivities = ReturnType<typeof createActivities>;
