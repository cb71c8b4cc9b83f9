import { withoutPassword } from '../db/logins.js';
import type { DevStack, DevStackOptions } from '../dev/devStack.js';
import type { Log } from '../log.js';
import { openCliContext, type CliContextOptions, type StackContext } from './context.js';

/** A running (or reached) stack with an up-to-date schema; what the demo and scripts/ work on. */
type OpenStack = StackContext;

/**
 * Connects to the deployment named by `DATABASE_URL` / `TEMPORAL_ADDRESS`, starting the embedded
 * default for whichever is unset, and brings the schema up to date: the context of the commands
 * that run baton (`dev`, `worker`, `demo`, `check`, `drill`) with migrations on.
 */
export function openStack(log: Log, options: DevStackOptions = {}, login: CliContextOptions['login'] = 'client'): Promise<OpenStack> {
  return openCliContext(log, { start: options, migrate: true, login });
}

/** Prints where everything runs, with the variables another shell needs to reach it. */
export function describeStack(stack: DevStack, log: Log): void {
  log(`Postgres ${stack.postgresVersion}${stack.embeddedPostgres ? ' (embedded)' : ''}: ${withoutPassword(stack.databaseUrl)}`);
  const version = stack.temporalServerVersion ? ` ${stack.temporalServerVersion}` : '';
  log(`Temporal${version}: ${stack.temporal.connectionOptions.address} (namespace ${stack.temporal.namespace})`);
  if (stack.temporalUiUrl) log(`Temporal UI: ${stack.temporalUiUrl}`);
}
