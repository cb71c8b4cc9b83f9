// What every `baton` command needs before it does its work, in one place: which deployment it
// talks to (DATABASE_URL / TEMPORAL_*, else the running `baton dev` it finds from the working
// folder up, else an embedded stack it starts), whether the schema is brought up to date or only
// checked, Temporal connections opened on first use, and who the caller is.
import { userInfo } from 'node:os';
import type { Client, Connection, ConnectionOptions } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Tracing } from '../observability/tracing.js';
import type pg from 'pg';
import { BATON_ACTOR_ENV, batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../config.js';
import { migrate, type MigrateResult, requireMigrated } from '../db/migrate.js';
import { InvalidInputError } from '../errors.js';
import { asLogin } from '../db/logins.js';
import { createPool } from '../db/pool.js';
import { requireGroupMember, RolesMissingError, type GroupRole } from '../db/roles.js';
import { DEV_LOGINS, devLoginUrl, ensureDevLogins, type DevComponent } from '../dev/devLogins.js';
import type { DevStack, DevStackOptions } from '../dev/devStack.js';
import { devStackSearchPath, findDevStack, type FoundDevStack } from '../dev/devStackState.js';
import { EMBEDDED_SUPERUSER, embeddedPostgresSecretFile, embeddedPostgresUrl, pingPostgres } from '../dev/embeddedPostgres.js';
import { DevStackNotFoundError, TemporalNotNamedError } from '../dev/errors.js';
import { readSecretFile } from '../dev/secretFile.js';
import type { Log } from '../log.js';
import { connectWorker, temporalSettings, type TemporalSettings } from '../temporal/connection.js';

/** Connections a command on a deployment needs: one query or transaction at a time. (Default: 2) */
const CLI_POOL_SIZE_DEFAULT = 2;

/** The operator running the CLI, for the event log: `BATON_ACTOR`, else the OS user. */
export function operatorActor(): string {
  return readEnv(BATON_ACTOR_ENV) ?? userInfo().username;
}

/** The identity a shared-object command acts as: `--as`, else `BATON_ACTOR`; never guessed. */
export function declaredActor(as: string | undefined): string {
  const actor = as ?? readEnv(BATON_ACTOR_ENV);
  if (!actor) throw new InvalidInputError(`say who you are: --as <actor> or ${BATON_ACTOR_ENV} (in production, the agent's token decides)`);
  return actor;
}

/** The deployment named by the environment; either may be unset. */
function deploymentEnv(): { databaseUrl?: string; temporalAddress?: string } {
  return { databaseUrl: readEnv(DATABASE_URL_ENV), temporalAddress: readEnv(TEMPORAL_ADDRESS_ENV) };
}

export interface CliContextOptions {
  /**
   * Bring the schema up to date first (under migrate's advisory lock) and log what was applied;
   * when false, change nothing and refuse a database that is not migrated.
   */
  migrate: boolean;
  /**
   * Start what DATABASE_URL / TEMPORAL_ADDRESS do not name, as `baton dev` does: the embedded
   * Postgres and the Temporal dev server, with these options. (Default: start nothing; an unset
   * DATABASE_URL means the database of the running `baton dev` that `findDevStack` finds, and
   * then an unset TEMPORAL_ADDRESS means its Temporal.)
   */
  start?: DevStackOptions;
  /** Refuse to run without DATABASE_URL, with this reason, rather than use `baton dev`'s database. */
  databaseUrlRequired?: string;
  /** Postgres pool size. (Default: 2; with `start`, the pool's own default) */
  poolSize?: number;
  /** Postgres `application_name`, shown in `pg_stat_activity`. (Default: `baton`) */
  applicationName?: string;
  /**
   * Which of the embedded stack's logins the command uses once the superuser has migrated: the
   * worker's (a member of baton_worker) or the client's (baton_client). A DATABASE_URL is used as
   * given; 'admin' keeps the login that migrated (the drill's harness). (Default: 'client')
   */
  login?: DevComponent | 'admin';
  /** Refuse, at start, a login that is not in this group role (nor the owner's, nor a superuser). */
  requireRole?: GroupRole;
  /**
   * The command works through Temporal (a worker, the health check): refuse before anything is
   * touched when the deployment names no Temporal server (no `TEMPORAL_ADDRESS`, no address in a
   * Temporal config profile, no `baton dev` found). (Default: refuse at the first call that dials)
   */
  needsTemporal?: boolean;
}

export interface CliContext {
  pool: pg.Pool;
  /** The login this command uses (the component's, on the embedded stack). */
  databaseUrl: string;
  /** On the embedded stack: every component's login, for the processes a command starts. */
  componentUrls?: Record<DevComponent, string>;
  /** The baton home of the `baton dev` stack this command started or reached, when it did. */
  devHome?: string;
  temporalSettings: TemporalSettings;
  /** The Temporal Web UI of the `baton dev` stack this command started or reached, when it has one. */
  temporalUiUrl?: string;
  /** The stack started (or reached) for a context opened with `start`. */
  stack?: DevStack;
  /** What was applied; set when the context was opened with `migrate: true`. */
  migration?: MigrateResult;
  /**
   * A Temporal client, made on first call and closed with the context. It dials now and says so
   * when the server does not answer, so a command that starts workflows fails before it writes
   * anything; with `connect: false` it dials only if a call needs it (baton's client in a command
   * that reads Postgres only).
   */
  temporal(options?: { connect?: boolean }): Promise<Client>;
  /** A worker connection, opened on first call and closed with the context (after its workers stop). */
  workerConnection(): Promise<NativeConnection>;
  /** Closes the connections, the pool, then whatever was started, in that order. */
  close(): Promise<void>;
}

/** A context opened with `start`: the stack is what runs (or what was given). */
export interface StackContext extends CliContext {
  stack: DevStack;
}

/**
 * Opens the deployment a command works on: the Postgres pool (schema migrated or checked), the
 * Temporal settings, and with `start` the embedded stack for whatever the environment leaves unset.
 */
export async function openCliContext(log: Log, options: CliContextOptions & { start: DevStackOptions }): Promise<StackContext>;
export async function openCliContext(log: Log, options: CliContextOptions): Promise<CliContext>;
export async function openCliContext(log: Log, options: CliContextOptions): Promise<CliContext> {
  const env = deploymentEnv();
  if (options.databaseUrlRequired && !env.databaseUrl) throw new Error(`${DATABASE_URL_ENV} is not set; ${options.databaseUrlRequired}`);
  // The dev stack's module (and the Temporal SDK it loads) only for a command that starts one.
  const stack = options.start
    ? await (
        await import('../dev/devStack.js')
      ).startDevStack({ databaseUrl: env.databaseUrl, temporalAddress: env.temporalAddress, log, ...options.start })
    : undefined;
  const poolOptions = { max: options.poolSize ?? (stack ? undefined : CLI_POOL_SIZE_DEFAULT), applicationName: options.applicationName };
  // Without DATABASE_URL, the database and (unless TEMPORAL_ADDRESS says otherwise) Temporal are
  // the running `baton dev`'s, as a pair: never its database with some other Temporal.
  const dev = stack || env.databaseUrl ? undefined : await reachDevStack(log);
  const component = options.login === 'admin' || !options.login ? 'client' : options.login;
  let databaseUrl = stack?.databaseUrl ?? (await reachDatabase(dev ? { dev } : { databaseUrl: env.databaseUrl! }, component));
  const devTemporal = env.temporalAddress ? undefined : dev?.state.temporal;
  const settings =
    stack?.temporal ?? temporalSettings(devTemporal ? { address: devTemporal.address, namespace: devTemporal.namespace } : {});
  // Read once the database answers: a Temporal config file out of this user's reach is not the first
  // thing to report. Never Temporal's own default (localhost:7233) for a deployment that names its
  // database: a setting left out would send this command's workflows to whatever answers there.
  const unnamed = settings.connectionOptions.address ? undefined : new TemporalNotNamedError();
  if (options.needsTemporal && unnamed) throw unnamed;
  let pool = createPool(databaseUrl, poolOptions);
  let migration: MigrateResult | undefined;
  let componentUrls: Record<DevComponent, string> | undefined;
  try {
    migration = options.migrate ? await migrateIfAllowed(pool, log) : (await requireMigrated(pool), undefined);
    if (stack?.embeddedPostgres) {
      componentUrls = await ensureDevLogins(pool, databaseUrl, stack.home);
      if (options.login !== 'admin') {
        // The superuser's work is done: the command goes on as its component's login.
        await pool.end();
        databaseUrl = componentUrls[options.login ?? 'client'];
        pool = createPool(databaseUrl, poolOptions);
      }
    }
    if (options.requireRole) await requireGroupMember(pool, options.requireRole);
    await stack?.ready();
  } catch (error) {
    await pool.end();
    await stack?.stop();
    throw error;
  }

  let connection: Connection | undefined;
  let client: Client | undefined;
  let tracing: Tracing | undefined;
  let worker: Promise<NativeConnection> | undefined;
  const unreachable = (error: Error) => new Error(`cannot reach Temporal at ${settings.connectionOptions.address}: ${error.message}`);
  return {
    pool,
    databaseUrl,
    componentUrls,
    devHome: stack?.embeddedPostgres ? stack.home : dev?.home,
    temporalSettings: settings,
    temporalUiUrl: stack ? stack.temporalUiUrl : devTemporal?.uiUrl,
    stack,
    migration,
    temporal: async ({ connect = true } = {}) => {
      const { Client, Connection } = await import('@temporalio/client');
      connection ??= Connection.lazy(settings.connectionOptions as ConnectionOptions);
      if (!client) {
        // With OTEL_EXPORTER_OTLP_ENDPOINT set, a graph's trace starts where its workflow is started (SPEC U6).
        tracing = await (await import('../observability/tracing.js')).startTracing('client', log);
        client = new Client({ connection, namespace: settings.namespace, interceptors: { workflow: tracing?.clientInterceptors ?? [] } });
      }
      if (connect) {
        if (unnamed) throw unnamed;
        try {
          await connection.ensureConnected();
        } catch (error) {
          throw unreachable(error as Error);
        }
      }
      return client;
    },
    workerConnection: () =>
      unnamed
        ? Promise.reject(unnamed)
        : (worker ??= connectWorker(settings).catch((error: Error) => {
            worker = undefined;
            throw unreachable(error);
          })),
    close: async () => {
      await tracing?.shutdown();
      await connection?.close();
      await (await worker?.catch(() => undefined))?.close();
      await pool.end();
      await stack?.stop();
    },
  };
}

/** Runs `fn` in a context and closes it afterwards, whether `fn` succeeds or throws. */
export async function withCliContext<T>(
  log: Log,
  options: CliContextOptions & { start: DevStackOptions },
  fn: (context: StackContext) => Promise<T>,
): Promise<T>;
export async function withCliContext<T>(log: Log, options: CliContextOptions, fn: (context: CliContext) => Promise<T>): Promise<T>;
export async function withCliContext<T>(log: Log, options: CliContextOptions, fn: (context: StackContext) => Promise<T>): Promise<T> {
  const context = (await openCliContext(log, options)) as StackContext;
  try {
    return await fn(context);
  } finally {
    await context.close();
  }
}

/**
 * Migrates when this login may; a component's own login (a worker given its DATABASE_URL) may
 * not, and then the schema must already be current: `baton migrate` is run by an administrator.
 */
async function migrateIfAllowed(pool: pg.Pool, log: Log): Promise<MigrateResult | undefined> {
  try {
    const migration = await migrate(pool);
    if (migration.applied.length) log(`Applied migrations: ${migration.applied.map((m) => `${m.id}_${m.name}`).join(', ')}`);
    return migration;
  } catch (error) {
    if (!(error instanceof RolesMissingError)) throw error;
    await requireMigrated(pool).catch(() => {
      throw error;
    });
    log('This login may not migrate (it is not the schema owner); the schema is current.');
    return undefined;
  }
}

/**
 * The superuser of `baton dev`'s database, when `databaseUrl` is one of its component logins and
 * this OS user may read the superuser's secret in the stack's baton home `home` (the stack's own
 * user); else undefined. For what only an administrator may look at. (Default home: `batonHome()`)
 */
export async function devAdministratorUrl(databaseUrl: string, home: string = batonHome()): Promise<string | undefined> {
  const login = decodeURIComponent(new URL(databaseUrl).username);
  if (!Object.values(DEV_LOGINS).some((d) => d.login === login)) return undefined;
  const { devPostgresDataDir } = await import('../dev/devStack.js');
  const password = await readSecretFile(embeddedPostgresSecretFile(devPostgresDataDir(home))).catch(() => undefined);
  return password === undefined ? undefined : asLogin(databaseUrl, EMBEDDED_SUPERUSER, password);
}

/** A running `baton dev` whose embedded Postgres a command may use. */
interface ReachedDevStack extends FoundDevStack {
  postgres: { host: string; port: number; database: string };
}

/** The running `baton dev` a command without DATABASE_URL uses; says where it looked when there is none it can use. */
async function reachDevStack(log: Log): Promise<ReachedDevStack> {
  const found = await findDevStack({ log });
  const fix = `set ${DATABASE_URL_ENV} and ${TEMPORAL_ADDRESS_ENV}, or start 'npx baton dev' in this project`;
  if (!found) {
    throw new DevStackNotFoundError(
      `${DATABASE_URL_ENV} is not set and no running baton dev was found (looked for ${devStackSearchPath()}); ${fix}`,
    );
  }
  const { state, file } = found;
  if (!state.ready) {
    throw new DevStackNotFoundError(
      `\`${state.command}\` (pid ${state.pid}, ${file}) is still starting; run this again once it says Ready`,
    );
  }
  if (!state.postgres?.embedded) {
    const url = state.postgres ? ` (${state.postgres.url})` : '';
    throw new DevStackNotFoundError(
      `\`${state.command}\` (pid ${state.pid}, ${file}) uses the Postgres its ${DATABASE_URL_ENV} names${url}, whose password baton does not keep; set ${DATABASE_URL_ENV}`,
    );
  }
  return { ...found, postgres: state.postgres };
}

/** DATABASE_URL, else `component`'s login on the found `baton dev`'s database; explains how to get one when neither answers. */
async function reachDatabase(source: { databaseUrl: string } | { dev: ReachedDevStack }, component: DevComponent): Promise<string> {
  let url: string;
  let where = DATABASE_URL_ENV;
  if ('databaseUrl' in source) url = source.databaseUrl;
  else {
    const { postgres, home, file } = source.dev;
    where = `baton dev's database (${postgres.host}:${postgres.port}, ${file})`;
    url = await devLoginUrl(embeddedPostgresUrl(postgres.port, '', postgres.database), home, component).catch((error: Error) => {
      throw new Error(`${DATABASE_URL_ENV} is not set, and baton dev's ${component} login is out of reach: ${error.message}`);
    });
  }
  try {
    await pingPostgres(url);
  } catch (error) {
    throw new Error(
      `cannot reach Postgres at ${where}: ${(error as Error).message}. Set ${DATABASE_URL_ENV} and ${TEMPORAL_ADDRESS_ENV}, or start 'npx baton dev' in another shell.`,
    );
  }
  return url;
}
