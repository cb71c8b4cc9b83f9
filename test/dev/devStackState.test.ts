// A running `baton dev` says where it is in `.baton/dev-stack.json` (no secrets), and every command
// without DATABASE_URL finds it the way git finds its folder: from any subfolder of the project,
// whichever ports it was started on; BATON_HOME, when set, names the home instead. A stack that
// was killed leaves a stale file that commands pass over, and the next start there takes over.
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { devPostgresDataDir } from '../../src/dev/devStack.js';
import { devStackStateFile, type DevStackState } from '../../src/dev/devStackState.js';
import { stopLeftoverServers } from '../../src/dev/leftoverServers.js';
import { run } from '../../src/dev/run.js';
import { cleanEnv, runCli, type CliProcess } from '../helpers/cli.js';
import { devSecrets, devStackState, startDev } from '../helpers/devStack.js';

const GRAPH = `id: found-from-below
repo: ./repo
tasks:
  - key: hello
    run: echo hello > hello.txt && git add hello.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm hello
    verify: grep -q hello hello.txt
`;

let project: string;
let below: string;
let stateFile: string;
const running: CliProcess[] = [];
const env = () => cleanEnv({ TEMPORAL_CLI_PATH: inject('temporalCliPath') });
/** A command with neither DATABASE_URL nor TEMPORAL_ADDRESS nor BATON_HOME, run in `cwd`. */
const baton = (args: string[], cwd: string, extra: Record<string, string> = {}) => runCli(args, cleanEnv(extra), { cwd });

beforeAll(async () => {
  project = await mkdtemp(path.join(tmpdir(), 'baton-project-'));
  // A project folder as most are (mode 0755): the embedded Postgres and per-run agent users reach into it.
  await chmod(project, 0o755);
  stateFile = devStackStateFile(path.join(project, '.baton'));
  below = path.join(project, 'src', 'deep', 'down');
  await mkdir(below, { recursive: true });
  await mkdir(path.join(project, 'repo'));
  const git = (...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: path.join(project, 'repo') });
  await git('init', '-q', '-b', 'main');
  await git('commit', '-q', '--allow-empty', '-m', 'start');
  await writeFile(path.join(project, 'graph.yaml'), GRAPH);
});

afterAll(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  // Whatever a failed test left running: the servers of a killed `baton dev`.
  const left = await readFile(stateFile, 'utf8').catch(() => undefined);
  await stopLeftoverServers({
    stale: left ? (JSON.parse(left) as DevStackState) : undefined,
    postgresDataDir: devPostgresDataDir(path.join(project, '.baton')),
    log: () => {},
  }).catch(() => {});
  if (project) await rm(project, { recursive: true, force: true });
});

describe('finding baton dev from anywhere in the project', () => {
  let first: Awaited<ReturnType<typeof startDev>>;

  it('writes where it runs, with no secret, and commands in a subfolder use that stack on its own ports', async () => {
    first = await startDev(env(), { cwd: project });
    running.push(first.dev);
    const { state } = first;
    expect(state).toMatchObject({ pid: first.dev.child.pid, home: path.join(project, '.baton'), ready: true });
    expect(state.postgres).toEqual({ embedded: true, host: '127.0.0.1', port: expect.any(Number), database: 'baton' });
    expect(state.temporal).toMatchObject({ address: expect.stringMatching(/^127\.0\.0\.1:\d+$/), namespace: 'default' });
    // Started on free ports: nothing a command could have guessed.
    expect(state.postgres?.embedded && state.postgres.port).not.toBe(54329);
    expect(state.temporal?.address).not.toMatch(/:17233$/);
    const text = await readFile(stateFile, 'utf8');
    const secrets = await devSecrets(first.home);
    expect(secrets.length).toBeGreaterThanOrEqual(4); // the superuser and each component login
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      expect(first.dev.output()).not.toContain(secret);
    }

    // Temporal too: `submit` starts the graph's workflow on the stack's Temporal, where its worker runs it.
    const submitted = await baton(['submit', '../../../graph.yaml', '--watch'], below);
    expect(submitted.code, `${submitted.output}\n--- baton dev:\n${first.dev.output()}`).toBe(0);
    expect(submitted.stdout.trim()).toBe('found-from-below');
    const graphs = await baton(['graphs', '--json'], below);
    expect(graphs.code, graphs.output).toBe(0);
    expect(
      graphs.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string; state: string }),
    ).toEqual([expect.objectContaining({ id: 'found-from-below', state: 'verified' })]);
    const status = await baton(['status', 'found-from-below', '--json'], below);
    expect(status.code, status.output).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ key: 'hello', status: 'verified' });
    // A command that works through Temporal takes the stack's as well, as its worker login.
    const check = await baton(['check'], below);
    expect(check.code, check.output).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ id: expect.any(Number), workflowId: expect.any(String) });
  });

  it('is found through BATON_HOME from outside the project, and BATON_HOME is the only place looked at when set', async () => {
    const outside = await baton(['graphs', '--json'], tmpdir(), { BATON_HOME: first.home });
    expect(outside.code, outside.output).toBe(0);
    expect(outside.stdout).toContain('"id":"found-from-below"');

    const elsewhere = await mkdtemp(path.join(tmpdir(), 'baton-other-home-'));
    try {
      // A worker or a health check refuses too, and starts nothing of its own in that home.
      for (const args of [['graphs'], ['worker'], ['check']]) {
        const notThere = await baton(args, below, { BATON_HOME: elsewhere });
        expect(notThere.code, notThere.output).toBe(1);
        expect(notThere.output.trim(), args[0]).toBe(
          `baton: DATABASE_URL is not set and no running baton dev was found (looked for ${elsewhere} (BATON_HOME)); ` +
            "set DATABASE_URL and TEMPORAL_ADDRESS, or start 'npx baton dev' in this project",
        );
      }
      expect(await readdir(elsewhere)).toEqual([]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('refuses a second start in the same home, and leaves the running stack as it was', async () => {
    const second = await runCli(
      ['dev', '--postgres-port', '0', '--temporal-port', '0', '--ui-port', '0', '--page-port', '0', '--ops-port', '0'],
      env(),
      {
        cwd: project,
      },
    );
    expect(second.code, second.output).toBe(1);
    const { state } = first;
    const where = `Postgres 127.0.0.1:${state.postgres?.embedded && state.postgres.port}, Temporal ${state.temporal?.address}`;
    expect(second.output.trim()).toBe(
      `baton: a stack is already running from ${first.home}: \`${state.command}\` (pid ${state.pid}), ${where}; ` +
        'baton commands in this project use it. Stop it first, or start this one with another BATON_HOME',
    );
    expect(await devStackState(first.home)).toEqual(state);
    expect((await baton(['graphs'], below)).code).toBe(0);
  });

  it('passes over the state file of a killed stack with a note, and the next start stops what it left and takes over', async () => {
    first.dev.child.kill('SIGKILL');
    await first.dev.exited;
    const gone = await baton(['graphs'], below);
    expect(gone.code).toBe(1);
    expect(gone.output).toContain(`baton: passing over ${stateFile}: \`${first.state.command}\` (pid ${first.state.pid}) is gone`);
    expect(gone.output).toContain('no running baton dev was found');

    const again = await startDev(env(), { cwd: project });
    running.push(again.dev);
    const by = `left running by \`${first.state.command}\` \\(pid ${first.state.pid}\\)`;
    expect(again.dev.output()).toMatch(new RegExp(`Stopping the Temporal dev server \\(pid ${first.state.temporal?.pid}\\), ${by}`));
    expect(again.dev.output()).toMatch(new RegExp(`Stopping the embedded Postgres in \\S+ \\(pid \\d+\\), ${by}`));
    expect(again.state.pid).toBe(again.dev.child.pid);
    // The data is the same: the graph run before the kill is still there.
    const graphs = await baton(['graphs', '--json'], below);
    expect(graphs.stdout).toContain('"id":"found-from-below"');

    again.dev.child.kill('SIGINT');
    expect(await again.dev.exited).toBe(0);
    expect(await stat(stateFile).catch(() => undefined)).toBeUndefined();
  });
});
