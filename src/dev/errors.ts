import { BatonError } from '../errors.js';
import { DATABASE_URL_ENV, TEMPORAL_ADDRESS_ENV } from '../config.js';

/** A server of the local stack, with the `baton dev` flag that moves it. */
const DEV_SERVERS = {
  postgres: { what: 'the embedded Postgres', flag: '--postgres-port' },
  temporal: { what: 'the Temporal dev server', flag: '--temporal-port' },
  ui: { what: 'the Temporal Web UI', flag: '--ui-port' },
  page: { what: "the agent API and operator's page", flag: '--page-port' },
  ops: { what: 'the metrics and health port', flag: '--ops-port' },
} as const;

export type DevServer = keyof typeof DEV_SERVERS;

/**
 * Thrown when a port the local stack is to start a server on is already taken by another process:
 * the stack refuses rather than start beside it (or be answered by it). Nothing was started.
 */
export class PortTakenError extends BatonError {
  override readonly name = 'PortTakenError';
  readonly code = 'port_taken';
  constructor(
    readonly port: number,
    readonly server: DevServer,
    /** What holds the port, e.g. `temporal (pid 4242)`, when this user may see it. */
    readonly holder: string | undefined,
  ) {
    const { what, flag } = DEV_SERVERS[server];
    super(
      `port ${port} for ${what} is taken by ${holder ?? 'another process'}; ` +
        `choose another with \`baton dev ${flag} <port>\` (0 picks a free one), or stop what holds it`,
    );
  }
}

/**
 * Thrown when a stack is to be started in a baton home where one is running already (its state
 * file names a live process). Nothing was started.
 */
export class DevStackRunningError extends BatonError {
  override readonly name = 'DevStackRunningError';
  readonly code = 'dev_stack_running';
  constructor(
    readonly home: string,
    readonly pid: number,
    /** Where the running stack is, e.g. `Postgres 127.0.0.1:54329, Temporal 127.0.0.1:17233`. */
    where: string,
    command: string,
  ) {
    super(
      `a stack is already running from ${home}: \`${command}\` (pid ${pid})${where ? `, ${where}` : ''}; ` +
        'baton commands in this project use it. Stop it first, or start this one with another BATON_HOME',
    );
  }
}

/**
 * Thrown when a command needs `baton dev`'s stack (DATABASE_URL unset) and finds none running, or
 * finds one it cannot use (still starting, or on a database of its own DATABASE_URL).
 */
export class DevStackNotFoundError extends BatonError {
  override readonly name = 'DevStackNotFoundError';
  readonly code = 'dev_stack_not_found';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Thrown when a command that works through Temporal is given a database (DATABASE_URL) but no
 * Temporal server: no TEMPORAL_ADDRESS and no address in a Temporal config profile. Nothing was
 * touched; Temporal's own default, localhost:7233, is never assumed for a deployment.
 */
export class TemporalNotNamedError extends BatonError {
  override readonly name = 'TemporalNotNamedError';
  readonly code = 'temporal_not_named';
  constructor() {
    super(
      `${TEMPORAL_ADDRESS_ENV} is not set: ${DATABASE_URL_ENV} names a deployment, so name its Temporal server too ` +
        `(${TEMPORAL_ADDRESS_ENV}, or an address in a Temporal config profile)`,
    );
  }
}
