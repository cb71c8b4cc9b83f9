import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { cleanEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const NOT_MIGRATED = /baton: database is not migrated: run `baton migrate`/;

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-migrate-on-start-'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** An empty database of its own, dropped after `fn`. */
async function withEmptyDatabase(fn: (db: TestDatabase, env: NodeJS.ProcessEnv) => Promise<void>): Promise<void> {
  const db = await createTestDatabase({ migrate: false });
  try {
    await fn(
      db,
      cleanEnv({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') }),
    );
  } finally {
    await db.drop();
  }
}

const hasBatonSchema = async (db: TestDatabase) =>
  (await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'baton'")).rows[0]!.n === 1;

describe('commands that do not migrate', () => {
  it('leave an empty database untouched and say to run `baton migrate`', async () => {
    await withEmptyDatabase(async (db, env) => {
      const graph = path.join(dir, 'graph.yaml');
      await writeFile(graph, YAML.stringify({ id: 'g', tasks: [{ key: 'a', run: 'true', verify: 'true' }] }));
      const commands = [
        ['status', 'g', '--no-follow'],
        ['events', 'g'],
        ['events', 'g/a', '--json'],
        ['tool', 'list', 'g'],
        ['object', 'show', 'k', '--as', 'reader'],
        ['object', 'log', 'k', '--as', 'reader'],
        // Writes data, never schema.
        ['submit', graph],
        ['rerun', 'g/a', '--reason', 'test'],
        ['object', 'create', 'k', '--as', 'writer'],
      ];
      for (const args of commands) {
        const result = await runCli(args, env);
        expect(result.code, `baton ${args.join(' ')}: ${result.output}`).toBe(1);
        expect(result.output, `baton ${args.join(' ')}`).toMatch(NOT_MIGRATED);
        expect(result.output, `baton ${args.join(' ')}`).not.toMatch(/relation .* does not exist/);
      }
      expect(await hasBatonSchema(db)).toBe(false);
    });
  });

  it('name the migrations a database lacks, and work once it has them', async () => {
    await withEmptyDatabase(async (db, env) => {
      const migrate = await runCli(['migrate'], env);
      expect(migrate.code, migrate.output).toBe(0);
      expect(migrate.output).toMatch(/Applied \d+ migration\(s\); 0 were already applied\./);

      const status = await runCli(['status', 'nope', '--no-follow'], env);
      expect(status.code).toBe(2);
      expect(status.output).toMatch(/graph nope does not exist/);

      const { rows } = await db.pool.query<{ id: number; name: string }>(
        'DELETE FROM baton.migrations WHERE id = (SELECT max(id) FROM baton.migrations) RETURNING id, name',
      );
      const lacking = `${String(rows[0]!.id).padStart(4, '0')}_${rows[0]!.name}`;
      const stale = await runCli(['status', 'nope', '--no-follow'], env);
      expect(stale.code).toBe(1);
      expect(stale.output).toContain(`database is not migrated (missing ${lacking}): run \`baton migrate\``);
    });
  });

  it('`baton migrate` needs DATABASE_URL rather than guessing a database', async () => {
    const result = await runCli(['migrate'], cleanEnv({}));
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/DATABASE_URL is not set; baton migrate needs the database to migrate/);
  });
});

describe('commands that migrate as they start', () => {
  it('offer --no-migrate in their help; read commands do not', async () => {
    for (const command of ['dev', 'worker', 'check']) {
      const help = await runCli([command, '--help'], cleanEnv({}));
      expect(help.code).toBe(0);
      // Commander wraps help to the width of the option column; compare the words.
      expect(help.stdout.replace(/\s+/g, ' '), command).toContain(
        '--no-migrate do not apply pending migrations on start; refuse a database that is not migrated',
      );
    }
    for (const command of ['status', 'events', 'submit', 'migrate']) {
      expect((await runCli([command, '--help'], cleanEnv({}))).stdout, command).not.toContain('--no-migrate');
    }
    expect((await runCli(['--help'], cleanEnv({}))).stdout.replace(/\s+/g, ' ')).toContain(
      'migrate, dev, worker, demo, check and drill apply pending migrations as they start (dev, worker and check: unless --no-migrate)',
    );
  });

  it('with --no-migrate, leave an empty database untouched and refuse it', async () => {
    await withEmptyDatabase(async (db, env) => {
      for (const args of [
        ['worker', '--no-migrate'],
        ['dev', '--no-migrate', '--no-worker', '--page-port', '0', '--ops-port', '0'],
        ['check', '--no-migrate'],
      ]) {
        const result = await runCli(args, env);
        expect(result.code, `baton ${args.join(' ')}: ${result.output}`).toBe(1);
        expect(result.output, `baton ${args.join(' ')}`).toMatch(NOT_MIGRATED);
      }
      expect(await hasBatonSchema(db)).toBe(false);
    });
  });

  it('refuse a deployment that names no Temporal server before touching its database', async () => {
    await withEmptyDatabase(async (db, env) => {
      const { TEMPORAL_ADDRESS: _named, ...unnamed } = env;
      for (const args of [['worker'], ['check']]) {
        const result = await runCli(args, unnamed);
        expect(result.code, `baton ${args.join(' ')}: ${result.output}`).toBe(1);
        expect(result.output.trim()).toBe(
          'baton: TEMPORAL_ADDRESS is not set: DATABASE_URL names a deployment, so name its Temporal server too ' +
            '(TEMPORAL_ADDRESS, or an address in a Temporal config profile)',
        );
      }
      expect(await hasBatonSchema(db)).toBe(false);
    });
  });

  it('baton worker migrates an empty database before it polls, and stops cleanly', async () => {
    await withEmptyDatabase(async (db, env) => {
      const taskQueue = `migrate-on-start-${randomUUID().slice(0, 8)}`;
      const args = [
        'worker',
        '--task-queue',
        taskQueue,
        '--work-dir',
        path.join(dir, 'work'),
        '--workflow-bundle',
        inject('workflowBundlePath'),
      ];
      const worker = startCli(args, env);
      try {
        await worker.waitForOutput(new RegExp(`polling task queue '${taskQueue}'`));
        expect(worker.output()).toMatch(/Applied migrations: 1_\w+/);
        expect(await hasBatonSchema(db)).toBe(true);
        const status = await runCli(['status', 'nope', '--no-follow'], env);
        expect(status.output).toMatch(/graph nope does not exist/);
      } finally {
        worker.child.kill('SIGINT');
        expect(await worker.exited).toBe(0);
      }
    });
  });
});
