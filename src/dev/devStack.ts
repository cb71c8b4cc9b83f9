import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  batonHome,
  DEV_DATABASE_NAME,
  DEV_POSTGRES_PORT_DEFAULT,
  DEV_TEMPORAL_PORT_DEFAULT,
  DEV_TEMPORAL_UI_PORT_DEFAULT,
} from '../config.js';
import { withoutPassword } from '../db/logins.js';
import { ensureDatabase, withDatabase } from '../db/pool.js';
import { silentLog, type Log } from '../log.js';
import { temporalSettings, type TemporalSettings } from '../temporal/connection.js';
import { claimDevStackHome, devStackStateFile } from './devStackState.js';
import { pingPostgres, startEmbeddedPostgres } from './embeddedPostgres.js';
import { stopLeftoverServers } from './leftoverServers.js';
import { requirePortFree } from './portTaken.js';
import { resolveTemporalCli, type TemporalCli } from './temporalCli.js';
import { startTemporalDevServer } from './temporalDevServer.js';

export interface DevStackOptions {
  /** Project-local state folder. (Default: `./.baton`) */
  home?: string;
  /** Use this Postgres instead of starting the embedded one. */
  databaseUrl?: string;
  /** Use this Temporal frontend instead of starting the dev server. */
  temporalAddress?: string;
  /** Embedded Postgres port; 0 picks a free one; a port taken by another process is refused. (Default: 54329) */
  postgresPort?: number;
  /** Dev server gRPC port; 0 picks a free one; a port taken by another process is refused. (Default: 17233) */
  temporalPort?: number;
  /** Dev server UI port; 0 picks a free one; a port taken by another process is refused. (Default: 18233) */
  temporalUiPort?: number;
  /** Start the dev server without its UI. (Default: false) */
  headless?: boolean;
  /** Keep the dev server's state in memory only, for test runs. (Default: false) */
  ephemeralTemporal?: boolean;
  log?: Log;
  /** Progress of a first start's download (the Temporal CLI), for a line redrawn in place. (Default: none) */
  progress?: Log;
}

export interface DevStack {
  /** The baton home, absolute. */
  home: string;
  /** Where the stack says where it runs, for other commands; set when it started a server. */
  stateFile?: string;
  /** Connection string of baton's database (for the embedded one, with its generated password). */
  databaseUrl: string;
  postgresVersion: string;
  /** Whether Postgres is the embedded one started here. */
  embeddedPostgres: boolean;
  /** The file holding the embedded Postgres superuser's password; set when it was started here. */
  postgresSecretFile?: string;
  /** Connection settings for the Temporal server in use (env and `temporal.toml` for an external one). */
  temporal: TemporalSettings;
  temporalUiUrl?: string;
  /** Set when the dev server was started here. */
  temporalCli?: TemporalCli;
  temporalServerVersion?: string;
  /**
   * Says in the home's state file that other commands may now use the stack (call it once the
   * schema is current and the logins exist); until then they are told it is starting.
   */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/** The data folder of the embedded Postgres of the stack in `home`. */
export function devPostgresDataDir(home: string): string {
  return path.join(home, 'postgres');
}

/**
 * Starts what baton needs on one machine and is not given: an embedded Postgres with its data in
 * `home/postgres` (its superuser password generated into `home/credentials/postgres-superuser`),
 * and the Temporal dev server with its UI and its state in `home/temporal.sqlite`. A second start
 * reuses both, so earlier workflows and tasks are still there.
 *
 * Where it runs goes to `home/dev-stack.json` (no secrets) for other commands to find, removed
 * by `stop`. It refuses, before starting anything, a home where a stack runs already and a port
 * another process holds; it stops the servers a stack killed before its stop left running.
 */
export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const log = options.log ?? silentLog;
  const home = path.resolve(options.home ?? batonHome());
  const port = (value: number | undefined, fallback: number) => (value === 0 ? undefined : (value ?? fallback));
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s();
    stops.length = 0;
  };
  const startsPostgres = !options.databaseUrl;
  const startsTemporal = !options.temporalAddress;
  const claim = startsPostgres || startsTemporal ? await claimDevStackHome(home, log) : undefined;
  if (claim) stops.push(() => claim.release());

  try {
    const postgresPort = port(options.postgresPort, DEV_POSTGRES_PORT_DEFAULT);
    const temporalPort = port(options.temporalPort, DEV_TEMPORAL_PORT_DEFAULT);
    const temporalUiPort = port(options.temporalUiPort, DEV_TEMPORAL_UI_PORT_DEFAULT);
    if (claim) {
      await stopLeftoverServers({ stale: claim.stale, postgresDataDir: startsPostgres ? devPostgresDataDir(home) : undefined, log });
      if (startsPostgres && postgresPort !== undefined) await requirePortFree(postgresPort, 'postgres');
      if (startsTemporal && temporalPort !== undefined) await requirePortFree(temporalPort, 'temporal');
      if (startsTemporal && !options.headless && temporalUiPort !== undefined) await requirePortFree(temporalUiPort, 'ui');
    }

    let databaseUrl = options.databaseUrl;
    let postgresSecretFile: string | undefined;
    let postgresPortInUse: number | undefined;
    if (!databaseUrl) {
      const postgres = await startEmbeddedPostgres({ dataDir: devPostgresDataDir(home), port: postgresPort, log });
      stops.push(() => postgres.stop());
      postgresSecretFile = postgres.secretFile;
      postgresPortInUse = postgres.port;
      await ensureDatabase(postgres.url, DEV_DATABASE_NAME);
      databaseUrl = withDatabase(postgres.url, DEV_DATABASE_NAME);
    }
    const postgresVersion = await pingPostgres(databaseUrl);

    let temporalAddress = options.temporalAddress;
    let temporalCli: TemporalCli | undefined;
    let temporalServerVersion: string | undefined;
    let temporalUiUrl: string | undefined;
    let namespace: string | undefined;
    let temporalPid: number | undefined;
    if (!temporalAddress) {
      await mkdir(home, { recursive: true });
      temporalCli = await resolveTemporalCli({ log, progress: options.progress });
      log(`Temporal CLI: ${temporalCli.path} (${temporalCli.version}, found via ${temporalCli.route})`);
      const temporal = await startTemporalDevServer({
        cliPath: temporalCli.path,
        dbFilename: options.ephemeralTemporal ? undefined : path.join(home, 'temporal.sqlite'),
        port: temporalPort,
        uiPort: temporalUiPort,
        headless: options.headless,
        log,
      });
      stops.push(() => temporal.stop());
      temporalAddress = temporal.address;
      temporalServerVersion = temporal.serverVersion;
      temporalUiUrl = temporal.uiUrl;
      namespace = temporal.namespace;
      temporalPid = temporal.process.pid;
    }
    const temporal = temporalSettings({ address: temporalAddress, namespace });
    await claim?.update({
      postgres:
        postgresPortInUse === undefined
          ? { embedded: false, url: withoutPassword(databaseUrl) }
          : { embedded: true, host: '127.0.0.1', port: postgresPortInUse, database: DEV_DATABASE_NAME },
      temporal: {
        address: temporal.connectionOptions.address ?? temporalAddress,
        namespace: temporal.namespace,
        uiUrl: temporalUiUrl,
        pid: temporalPid,
      },
    });
    return {
      home,
      stateFile: claim ? devStackStateFile(home) : undefined,
      databaseUrl,
      postgresVersion,
      embeddedPostgres: !options.databaseUrl,
      postgresSecretFile,
      temporal,
      temporalUiUrl,
      temporalCli,
      temporalServerVersion,
      ready: async () => claim?.update({ ready: true }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
