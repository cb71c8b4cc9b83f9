import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { compiledIsCurrent } from '../bin/checkoutBuild.js';
import { batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, dropDatabase, ensureDatabase, withClient, withDatabase } from '../src/db/pool.js';
import { startDevStack, type DevStack } from '../src/dev/devStack.js';
import { resolveTemporalCli } from '../src/dev/temporalCli.js';
import { run } from '../src/dev/run.js';
import { cachedWorkflowBundle } from '../src/dev/workflowBundle.js';
import { PACKAGE_ROOT } from '../src/packageRoot.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin connection string; each test file creates its own database from it. */
    databaseUrl: string;
    temporalAddress: string;
    temporalNamespace: string;
    /** The Temporal CLI binary, resolved even when TEMPORAL_ADDRESS names an external server. */
    temporalCliPath: string;
    /** A database migrated once for the run, which each test file's database copies (`createTestDatabase`). */
    templateDatabase: string;
    /** The checkout's cached workflow bundle (`cachedWorkflowBundle`), made at most once per run. */
    workflowBundlePath: string;
  }
}

const out = (line: string) => process.stdout.write(`[baton test setup] ${line}\n`);

/**
 * Starts (or connects to) one Postgres and one Temporal dev server for the whole run. Nothing is
 * skipped when a server is missing: startup fails with the install hint instead.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // One folder per run: two overlapping runs must not share an embedded Postgres data folder.
  const home = path.join(batonHome(), 'test', `run-${process.pid}`);
  // The stack's servers start while dist/ builds: both wait on other processes much of the time.
  const [started, built] = await Promise.allSettled([startTestStack(home), buildDist()]);
  if (built.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop();
    throw built.reason;
  }
  if (started.status === 'rejected') throw started.reason;
  const stack = started.value;
  out(`PostgreSQL ${stack.postgresVersion} (${stack.embeddedPostgres ? 'embedded' : DATABASE_URL_ENV})`);
  out(
    `Temporal server ${stack.temporalServerVersion ?? '(external)'} at ${stack.temporal.connectionOptions.address}` +
      (stack.temporalCli ? `, CLI: ${stack.temporalCli.version} via ${stack.temporalCli.route}` : ''),
  );

  // The checkout's cached bundle, made here once if its sources changed, for the workers the tests
  // run in their own process (`baton worker` processes run dist/ and its prebuilt bundle).
  const workflowBundlePath = await cachedWorkflowBundle();

  project.provide('databaseUrl', stack.databaseUrl);
  project.provide('temporalAddress', stack.temporal.connectionOptions.address ?? '');
  project.provide('temporalNamespace', stack.temporal.namespace);
  // Tests of the dev stack itself start their own dev servers from this binary.
  project.provide('temporalCliPath', (stack.temporalCli ?? (await resolveTemporalCli({ log: out }))).path);
  project.provide('workflowBundlePath', workflowBundlePath);
  const template = await createTemplateDatabase(stack.databaseUrl);
  project.provide('templateDatabase', template);
  return async () => {
    await dropTemplateDatabase(stack.databaseUrl, template);
    await stack.stop();
    await rm(home, { recursive: true, force: true });
  };
}

async function startTestStack(home: string): Promise<DevStack> {
  try {
    return await startDevStack({
      home,
      databaseUrl: readEnv(DATABASE_URL_ENV),
      temporalAddress: readEnv(TEMPORAL_ADDRESS_ENV),
      postgresPort: 0,
      temporalPort: 0,
      headless: true,
      ephemeralTemporal: true,
      log: out,
    });
  } catch (error) {
    throw new Error(`baton's tests need a real Postgres and a real Temporal server and could not start them:\n${(error as Error).message}`);
  }
}

/**
 * Builds dist/ unless it holds the checkout's sources as they are, so every `baton` the tests start
 * (the CLI, worker processes, an agent's shim) runs compiled JavaScript, as installed: through tsx
 * each would spend up to seconds of CPU compiling at its start (bin/baton.js chooses).
 */
async function buildDist(): Promise<void> {
  if (compiledIsCurrent(PACKAGE_ROOT)) return;
  out('building dist/ (npm run build): the sources changed since the last build');
  await run('npm', ['run', '--silent', 'build'], { cwd: PACKAGE_ROOT, timeoutMs: 900_000 });
  if (!compiledIsCurrent(PACKAGE_ROOT)) throw new Error('npm run build finished, yet dist/ is not current: did a source change during it?');
}

/**
 * Migrates a database once for the run, for each test file's database to copy (CREATE DATABASE
 * ... TEMPLATE copies its files: a fraction of a second, where migrating takes about one). Marked a
 * template that takes no connections, so no session (autovacuum's included) is in it while it is copied.
 */
async function createTemplateDatabase(adminUrl: string): Promise<string> {
  const name = `baton_template_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await ensureDatabase(adminUrl, name);
  const pool = createPool(withDatabase(adminUrl, name), { max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  await withClient(adminUrl, (c) => c.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} IS_TEMPLATE true ALLOW_CONNECTIONS false`));
  return name;
}

async function dropTemplateDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (c) => c.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} IS_TEMPLATE false`));
  await dropDatabase(adminUrl, name);
}
