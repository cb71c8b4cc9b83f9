import path from 'node:path';
import { BATON_HOME_DIR_NAME, BATON_HOME_ENV, DATABASE_URL_ENV, TEMPORAL_ADDRESS_ENV } from '../config.js';
import { withoutPassword } from '../db/logins.js';
import { DEV_LOGINS, devLoginSecretFile } from '../dev/devLogins.js';
import type { DevStack, DevStackOptions } from '../dev/devStack.js';
import type { Log } from '../log.js';
import { shellQuote } from '../shellQuote.js';
import { openCliContext, type CliContext, type CliContextOptions, type StackContext } from './context.js';

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

/** Prints where a command's deployment is: the stack it started, else the one it was given or found. */
export function describeDeployment(context: CliContext, log: Log): void {
  if (context.stack) return describeStack(context.stack, log);
  log(`Postgres: ${withoutPassword(context.databaseUrl)}${context.devHome ? ` (baton dev in ${context.devHome})` : ''}`);
  const { connectionOptions, namespace } = context.temporalSettings;
  log(`Temporal: ${connectionOptions.address} (namespace ${namespace})`);
}

/**
 * Prints how another shell reaches `stack` without a password on the screen: baton commands find
 * it through its state file; other clients get a DATABASE_URL line that reads the client login's
 * password from its file when the shell runs it.
 */
export function describeReach(stack: DevStack, log: Log): void {
  const home = shellQuote(stack.home);
  log('In another shell:');
  // Commands look for `.baton/dev-stack.json` from their folder up, or in BATON_HOME.
  if (stack.stateFile && path.basename(stack.home) === BATON_HOME_DIR_NAME) {
    log(
      `  baton commands anywhere in ${path.dirname(stack.home)} find this stack (${stack.stateFile}); elsewhere: export ${BATON_HOME_ENV}=${home}`,
    );
  } else if (stack.stateFile) {
    log(`  export ${BATON_HOME_ENV}=${home}    # baton commands then find this stack (${stack.stateFile})`);
  }
  log(`  For other clients (psql, your own code)${stack.embeddedPostgres ? ', as the client login' : ''}:`);
  if (stack.embeddedPostgres) {
    // The shell reads the password when it runs the line; the line itself holds none.
    const server = new URL(stack.databaseUrl);
    server.username = '';
    server.password = '';
    const password = `$(cat ${shellQuote(devLoginSecretFile(stack.home, 'client'))})`;
    log(`  export ${DATABASE_URL_ENV}="${server.toString().replace('//', `//${DEV_LOGINS.client.login}:${password}@`)}"`);
  }
  log(`  export ${TEMPORAL_ADDRESS_ENV}=${shellQuote(stack.temporal.connectionOptions.address ?? '')}`);
}
