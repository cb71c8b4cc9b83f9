import { BatonError } from '../errors.js';

/** A server of the local stack, with the `baton dev` flag that moves it. */
const DEV_SERVERS = {
  postgres: { what: 'the embedded Postgres', flag: '--postgres-port' },
  temporal: { what: 'the Temporal dev server', flag: '--temporal-port' },
  ui: { what: 'the Temporal Web UI', flag: '--ui-port' },
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
