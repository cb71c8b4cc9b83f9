// What every `baton` command needs before it does its work, in one place: which deployment it
// talks to (DATABASE_URL / TEMPORAL_*, else a running `baton dev`, else an embedded stack it
// starts), whether the schema is brought up to date or only checked, Temporal connections opened
// on first use, and who the caller is.
import { userInfo } from 'node:os';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type pg from 'pg';
import {
  BATON_ACTOR_ENV,
  batonHome,
  DATABASE_URL_ENV,
  DEV_DATABASE_NAME,
  DEV_POSTGRES_PORT_DEFAULT,
  readEnv,
  TEMPORAL_ADDRESS_ENV,
} from '../config.js';
import { migrate, type MigrateResult, requireMigrated } from '../db/migrate.js';
import { InvalidInputError } from '../errors.js';
import { asLogin } from '../db/logins.js';
import { createPool } from '../db/pool.js';
import { requireGroupMember, RolesMissingError, type GroupRole } from '../db/roles.js';
import { DEV_LOGINS, devLoginUrl, ensureDevLogins, type DevComponent } from '../dev/devLogins.js';
import { devPostgresDataDir, startDevStack, type DevStack, type DevStackOptions } from '../dev/devStack.js';
import { EMBEDDED_SUPERUSER, embeddedPostgresSecretFile, embeddedPostgresUrl, pingPostgres } from '../dev/embeddedPostgres.js';
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
   * DATABASE_URL means the database of a running `baton dev`.)
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
}

export interface CliContext {
  pool: pg.Pool;
  /** The login this command uses (the component's, on the embedded stack). */
  databaseUrl: string;
  /** On the embedded stack: every component's login, for the processes a command starts. */
  componentUrls?: Record<DevComponent, string>;
  temporalSettings: TemporalSettings;
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
  const stack = options.start
    ? await startDevStack({ databaseUrl: env.databaseUrl, temporalAddress: env.temporalAddress, log, ...options.start })
    : undefined;
  const poolOptions = { max: options.poolSize ?? (stack ? undefined : CLI_POOL_SIZE_DEFAULT), applicationName: options.applicationName };
  let databaseUrl =
    stack?.databaseUrl ?? (await reachDatabase(env.databaseUrl, options.login === 'admin' || !options.login ? 'client' : options.login));
  let pool = createPool(databaseUrl, poolOptions);
  let migration: MigrateResult | undefined;
  let componentUrls: Record<DevComponent, string> | undefined;
  try {
    migration = options.migrate ? await migrateIfAllowed(pool, log) : (await requireMigrated(pool), undefined);
    if (stack?.embeddedPostgres) {
      componentUrls = await ensureDevLogins(pool, databaseUrl, options.start?.home ?? batonHome());
      if (options.login !== 'admin') {
        // The superuser's work is done: the command goes on as its component's login.
        await pool.end();
        databaseUrl = componentUrls[options.login ?? 'client'];
        pool = createPool(databaseUrl, poolOptions);
      }
    }
    if (options.requireRole) await requireGroupMember(pool, options.requireRole);
  } catch (error) {
    await pool.end();
    await stack?.stop();
    throw error;
  }

  const settings = stack?.temporal ?? temporalSettings();
  let connection: Connection | undefined;
  let client: Client | undefined;
  let worker: Promise<NativeConnection> | undefined;
  const unreachable = (error: Error) => new Error(`cannot reach Temporal at ${settings.connectionOptions.address}: ${error.message}`);
  return {
    pool,
    databaseUrl,
    componentUrls,
    temporalSettings: settings,
    stack,
    migration,
    temporal: async ({ connect = true } = {}) => {
      connection ??= Connection.lazy(settings.connectionOptions as ConnectionOptions);
      client ??= new Client({ connection, namespace: settings.namespace });
      if (connect) {
        try {
          await connection.ensureConnected();
        } catch (error) {
          throw unreachable(error as Error);
        }
      }
      return client;
    },
    workerConnection: () =>
      (worker ??= connectWorker(settings).catch((error: Error) => {
        worker = undefined;
        throw unreachable(error);
      })),
    close: async () => {
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
 * this OS user may read the superuser's secret in the baton home (the stack's own user); else
 * undefined. For what only an administrator may look at.
 */
export async function devAdministratorUrl(databaseUrl: string): Promise<string | undefined> {
  const login = decodeURIComponent(new URL(databaseUrl).username);
  if (!Object.values(DEV_LOGINS).some((d) => d.login === login)) return undefined;
  const password = await readSecretFile(embeddedPostgresSecretFile(devPostgresDataDir(batonHome()))).catch(() => undefined);
  return password === undefined ? undefined : asLogin(databaseUrl, EMBEDDED_SUPERUSER, password);
}

/** DATABASE_URL, else `component`'s login on `baton dev`'s database; explains how to get one when neither answers. */
async function reachDatabase(databaseUrl: string | undefined, component: DevComponent): Promise<string> {
  const fix = `Set ${DATABASE_URL_ENV} and ${TEMPORAL_ADDRESS_ENV}, or start 'npx baton dev' in another shell.`;
  const url =
    databaseUrl ??
    (await devLoginUrl(embeddedPostgresUrl(DEV_POSTGRES_PORT_DEFAULT, '', DEV_DATABASE_NAME), batonHome(), component).catch(
      (error: Error) => {
        throw new Error(`${DATABASE_URL_ENV} is not set, and baton dev's ${component} login is out of reach: ${error.message}`);
      },
    ));
  try {
    await pingPostgres(url);
  } catch (error) {
    const where = databaseUrl ? DATABASE_URL_ENV : `baton dev's database (127.0.0.1:${DEV_POSTGRES_PORT_DEFAULT})`;
    throw new Error(`cannot reach Postgres at ${where}: ${(error as Error).message}. ${fix}`);
  }
  return url;
}
