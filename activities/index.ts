import type { Runner } from '../src/runners/types.js';
import { isBatonName, unprefixedName } from '../src/temporal/batonNames.js';
import { runAgentIdentity } from '../src/tasks/taskId.js';
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
 * Builds baton's activities around their dependencies, each named with the `baton` prefix
 * (`batonRunTask`), so they sit beside a host's own activities in one worker: register the result
 * in any worker, `Worker.create({ activities: createActivities(deps), ... })`; tests spread it and
 * override one. It holds none of the names baton 0.1 used (see `withUnprefixedAliases`).
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
 * claim version the run's, so nothing the agent sends can name another task or owner; the
 * objects its preconditions name are checked against its agent's access.
 */
function withToolAccess(runner: Runner, gateway: ToolGateway, identity: string): Runner {
  return {
    ...runner,
    run: (ctx) =>
      runner.run({
        ...ctx,
        callTool: (call) =>
          gateway.call(
            { taskId: ctx.claim.taskId, owner: identity, claimVersion: ctx.claim.claimVersion },
            call,
            runAgentIdentity(ctx.claim),
          ),
      }),
  };
}

export type BatonActivities = ReturnType<typeof createActivities>;

/**
 * `activities` plus each under the name baton 0.1 gave it (`runTask` beside `batonRunTask`), for what
 * executions started by 0.1 scheduled under those names before an upgrade and is still queued or
 * retried. baton's own worker (`createBatonWorker`, `baton worker`) registers them; `createActivities`
 * does not, so a host keeps those plain names for its own activities. A host that ran baton 0.1 inside
 * its own worker registers this too until none of those executions is open; workflows/index.ts says
 * when the aliases go.
 */
export function withUnprefixedAliases<T extends Record<string, unknown>>(activities: T): T & Record<string, T[keyof T]> {
  const aliases: Record<string, T[keyof T]> = {};
  for (const [name, fn] of Object.entries(activities) as Array<[string, T[keyof T]]>) {
    // A host's own activities spread in beside baton's keep their names and get no alias.
    if (isBatonName(name)) aliases[unprefixedName(name)] = fn;
  }
  return { ...aliases, ...activities };
}
