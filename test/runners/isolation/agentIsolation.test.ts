import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/dev/waitFor.js';
import {
  agentIsolationStatus,
  isolationWarning,
  resolveAgentIsolation,
  type AgentIsolation,
} from '../../../src/runners/isolation/agentIsolation.js';
import { createCommandRunner } from '../../../src/runners/commandRunner.js';
import { createCommandVerifier } from '../../../src/runners/commandVerifier.js';
import { git } from '../../../src/runners/git.js';
import { AgentIsolationUnavailableError } from '../../../src/runners/isolation/errors.js';
import { openAgentWorkspace } from '../../../src/runners/isolation/workspace.js';
import { runShell } from '../../../src/runners/processes.js';
import { AgentFailedError, type RunContext } from '../../../src/runners/types.js';
import { isolateOwner } from '../../../src/runners/isolation/isolateOwner.js';
import { createBatonWorker } from '../../../src/worker.js';
import type { Claim } from '../../../src/tasks/types.js';
import { taskIdOf } from '../../../src/tasks/taskId.js';
import type { HarnessConfig, HarnessReport } from '../hostileHarness.js';
import { installQuietTemporalRuntime } from '../../helpers/temporal.js';
import { runHarness, useHostileScene, workerFolders } from '../hostileScene.js';
import { requireIsolationHost } from '../isolationHost.js';

/** What the worker holds that no agent may learn: in its environment, and in a file of the baton home. */
const WORKER_CANARY = `worker-env-${randomUUID()}`;
const FILE_CANARY = `baton-home-${randomUUID()}`;

const scene = useHostileScene('isolation');

/** Runs the victim and the hostile agent in a worker-like process of their own (hostileHarness.ts). */
async function attack(isolation: HarnessConfig['isolation']): Promise<HarnessReport & { wrote: string[] }> {
  const { repo } = scene;
  const folders = await workerFolders(scene.scratch, FILE_CANARY);
  const config: HarnessConfig = { isolation, repo, ...folders, graphId: `iso-${randomUUID().slice(0, 8)}` };
  const { report } = await runHarness(config, { ...process.env, BATON_HOME: folders.home, BATON_TEST_CANARY: WORKER_CANARY });
  // Whatever the agent believes it wrote, these are the files that exist outside its checkout.
  const wrote: string[] = [];
  for (const dir of [folders.home, folders.workDir, folders.outside, path.join(repo, '.git')]) {
    if (
      await stat(path.join(dir, 'hostile-was-here')).then(
        () => true,
        () => false,
      )
    )
      wrote.push(dir);
  }
  await rm(path.join(repo, '.git', 'hostile-was-here'), { force: true });
  return { ...report, wrote };
}

const outcomes = (report: HarnessReport) => Object.fromEntries(Object.entries(report.attacks).map(([name, a]) => [name, a.outcome]));

/** The attacks every isolated set-up must stop. */
const ISOLATED_ATTACKS_BLOCKED = {
  worker_environ: 'blocked',
  any_environ: 'blocked',
  baton_home_file: 'blocked',
  baton_home_list: 'blocked',
  work_dir_list: 'blocked',
  victim_worktree: 'blocked',
  victim_token: 'blocked',
  victim_tool_call: 'blocked',
  write_outside: 'blocked',
  rewrite_branch: 'blocked',
  signal_worker: 'blocked',
};

describe('S4: a hostile command agent under the defaults of a root worker (per-run user, bubblewrap, outside network)', () => {
  requireIsolationHost({ root: true, bubblewrap: true, slirp4netns: true });
  it("cannot read the worker, the baton home or another run, write outside its checkout or reach the worker's 127.0.0.1; it reaches the outside and its own work lands", async () => {
    const report = await attack({});
    expect(outcomes(report)).toEqual({
      ...ISOLATED_ATTACKS_BLOCKED,
      tcp_localhost: 'blocked',
      tcp_outside: 'succeeded',
      own_tool_call: 'succeeded',
    });
    expect(report.wrote).toEqual([]);
    expect(report.victimToolCalls).toEqual([]);
    expect(report.hostileError).toBeUndefined();
    expect(await git(scene.repo, ['show', `${report.hostileRevision}:hostile.txt`])).toBe('done');
    expect(report.hostileUid).toBeGreaterThanOrEqual(1_000);
    expect(report.victimUid).toBeGreaterThanOrEqual(1_000);
    expect(report.hostileUid).not.toBe(report.victimUid);
  });
});

describe('S4: a hostile command agent under per-run users with no sandbox (--agent-sandbox none)', () => {
  requireIsolationHost({ root: true });
  it("is kept from the worker and other runs, but shares the worker's network, 127.0.0.1 included (documented)", async () => {
    const report = await attack({ sandbox: 'none' });
    expect(outcomes(report)).toEqual({
      ...ISOLATED_ATTACKS_BLOCKED,
      tcp_localhost: 'succeeded',
      tcp_outside: 'succeeded',
      own_tool_call: 'succeeded',
    });
    expect(report.attacks.tcp_localhost!.evidence).toBe('127.0.0.1,');
    expect(report.wrote).toEqual([]);
    expect(report.victimToolCalls).toEqual([]);
  });
});

describe('S4: a hostile command agent in the bubblewrap sandbox with --agent-network none', () => {
  requireIsolationHost({ root: true, bubblewrap: true });
  it('is stopped everywhere, the outside included, and still reaches its agent API endpoint through its socket', async () => {
    const report = await attack({ network: 'none' });
    expect(outcomes(report)).toEqual({
      ...ISOLATED_ATTACKS_BLOCKED,
      tcp_localhost: 'blocked',
      tcp_outside: 'blocked',
      own_tool_call: 'succeeded',
    });
    expect(report.wrote).toEqual([]);
    expect(report.victimToolCalls).toEqual([]);
    expect(await git(scene.repo, ['show', `${report.hostileRevision}:own-call.json`])).toContain('"own-step"');
  });

  it("keeps a worker's own user apart too (bubblewrap, as a non-root worker gets it; the host network)", async () => {
    const report = await attack({ user: 'worker', sandbox: 'bubblewrap', network: 'host' });
    expect(outcomes(report)).toEqual({
      ...ISOLATED_ATTACKS_BLOCKED,
      tcp_localhost: 'succeeded',
      tcp_outside: 'succeeded',
      own_tool_call: 'succeeded',
    });
    expect(report.wrote).toEqual([]);
  });
});

describe('the same hostile agent against a deliberately weakened set-up (isolation off)', () => {
  it('gets through every door, which proves the test above can fail', async () => {
    const report = await attack('off');
    expect(outcomes(report)).toEqual(
      Object.fromEntries(
        Object.keys({ ...ISOLATED_ATTACKS_BLOCKED, tcp_localhost: 1, tcp_outside: 1, own_tool_call: 1 }).map((k) => [k, 'succeeded']),
      ),
    );
    const evidence = (name: string) => report.attacks[name]!.evidence;
    expect(evidence('worker_environ')).toBe(WORKER_CANARY);
    expect(evidence('any_environ')).toBe('BATON_TEST_CANARY,BATON_TOKEN,');
    expect(evidence('baton_home_file')).toBe(FILE_CANARY);
    expect(evidence('victim_token')).toBe(report.victimTokenSha);
    expect(evidence('victim_worktree')).toMatch(/^victim secret iso-/);
    expect(report.victimToolCalls).toEqual([{ tool: 'payments', step: 'stolen-step', params: null }]);
    expect(report.wrote).toHaveLength(4);
  });
});

// ----- cancellation, recovery and verification under per-run users (in this process) -----

function claimFor(command: string): Claim {
  const graphId = `iso-${randomUUID().slice(0, 8)}`;
  return {
    taskId: taskIdOf(graphId, 'work'),
    graphId,
    key: 'work',
    claimVersion: 1,
    spec: { run: { command }, verify: { command: 'true' } },
    upstreamRevisions: {},
  } as unknown as Claim;
}

/** Pids of every process running as `uid`, from /proc. */
async function processesOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status)) pids.push(Number(entry));
  }
  return pids;
}

/** An agent that leaves a background child and a process in a session of its own (setsid), then waits. */
const LINGERING_AGENT = 'sleep 300 & setsid sleep 301 & echo READY; sleep 302';

async function startLingering(isolation: AgentIsolation, signal: AbortSignal) {
  const { workDir } = await workerFolders(scene.scratch, FILE_CANARY);
  const runner = createCommandRunner({ workDir, isolation, heartbeatIntervalMs: 200 });
  const claim = claimFor(LINGERING_AGENT);
  let pid: number | undefined;
  const lines: string[] = [];
  const ctx: RunContext = {
    claim,
    repo: scene.repo,
    base: 'main',
    signal,
    log: (l) => lines.push(l),
    heartbeat: async (p) => void (pid = p.pid as number),
  };
  const run = runner.run(ctx);
  run.catch(() => undefined);
  await waitFor(
    'the agent to start',
    async () => {
      if (!pid || !lines.includes('READY')) throw new Error('not yet');
    },
    { timeoutMs: 120_000, intervalMs: 50 },
  );
  const uid = Number(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]);
  await waitFor(
    'its three processes',
    async () => {
      if ((await processesOf(uid)).length < 4) throw new Error('not yet');
    },
    { timeoutMs: 120_000, intervalMs: 50 },
  );
  return { run, pid: pid!, uid, claim };
}

describe('stopping an isolated agent', () => {
  requireIsolationHost({ root: true });
  let isolation: AgentIsolation;
  beforeAll(async () => {
    isolation = await resolveAgentIsolation({ sandbox: 'none' });
  });

  it('cancellation kills its whole process group and every process of its uid, the setsid escapee included', async () => {
    const abort = new AbortController();
    const { run, uid } = await startLingering(isolation, abort.signal);
    expect(uid).not.toBe(0);
    abort.abort(new Error('cancelled by the test'));
    await expect(run).rejects.toThrow('cancelled by the test');
    await waitFor(
      'no process of the agent uid',
      async () => {
        const left = await processesOf(uid);
        if (left.length) throw new Error(`still running: ${left.join(', ')}`);
      },
      { timeoutMs: 120_000, intervalMs: 50 },
    );
  });

  it("recovery (isolateOwner) kills a silent owner's agent running under another uid, and only for its claim", async () => {
    const { run, pid, uid, claim } = await startLingering(isolation, new AbortController().signal);
    expect(await isolateOwner(claim.taskId, 2, { pid, host: hostname() })).toMatch(/no longer runs this claim's agent/);
    expect((await processesOf(uid)).length).toBeGreaterThanOrEqual(4);
    expect(await isolateOwner(claim.taskId, 1, { pid, host: hostname() })).toBe(
      `killed agent process group ${pid} on ${hostname()} and every process of its uid ${uid}`,
    );
    await expect(run).rejects.toBeInstanceOf(AgentFailedError);
    await waitFor(
      'no process of the agent uid',
      async () => {
        const left = await processesOf(uid);
        if (left.length) throw new Error(`still running: ${left.join(', ')}`);
      },
      { timeoutMs: 120_000, intervalMs: 50 },
    );
  });

  it("clears what a crashed worker's agent left (its processes, its folder) before its uid serves another run", async () => {
    const uid = 1_950_000_000 + Math.floor(Math.random() * 1_000_000);
    const agents = path.join(scene.scratch, `agents-${randomUUID().slice(0, 8)}`);
    const single = await resolveAgentIsolation({ sandbox: 'none', root: agents, uids: { first: uid, count: 1 } });
    const leftover = path.join(agents, `${uid}-0123456789abcdef`);
    await mkdir(leftover, { recursive: true, mode: 0o700 });
    await writeFile(path.join(leftover, 'secret-of-the-last-run'), 'x');
    const orphan = spawn('sleep', ['300'], { uid, gid: uid, cwd: '/', detached: true, stdio: 'ignore' });
    orphan.unref();
    expect(await processesOf(uid)).toEqual([orphan.pid]);
    const { workDir } = await workerFolders(scene.scratch, FILE_CANARY);
    const runner = createCommandRunner({ workDir, isolation: single });
    const claim = claimFor('ls ..; echo ok > ok.txt && git add ok.txt && git -c user.name=a -c user.email=a@b commit -qm ok');
    const lines: string[] = [];
    const artifact = await runner.run({
      claim,
      repo: scene.repo,
      base: 'main',
      signal: new AbortController().signal,
      log: (l) => lines.push(l),
      heartbeat: async () => {},
    });
    expect(await git(scene.repo, ['show', `${artifact.revision}:ok.txt`])).toBe('ok');
    expect(lines.join('\n')).not.toContain('0123456789abcdef');
    expect(await readdir(agents)).toEqual([]);
    expect(await processesOf(uid)).toEqual([]);
  });

  it('the verify command runs isolated too: it cannot read the baton home, and its result is its own', async () => {
    const { home, workDir } = await workerFolders(scene.scratch, FILE_CANARY);
    const revision = await git(scene.repo, ['rev-parse', 'main']);
    const command = `cat ${JSON.stringify(path.join(home, 'canary-secret'))} && exit 7; id -u; test -f README.md`;
    const verify = (v: ReturnType<typeof createCommandVerifier>) =>
      v.verify({
        taskId: 'g/t',
        repo: scene.repo,
        artifact: { revision, baseRevision: revision, testCommand: command, agentResult: { exitCode: 0, outputDigest: 'x' } },
        verify: { command },
        heartbeat: () => {},
        signal: new AbortController().signal,
      });
    const isolated = await verify(createCommandVerifier({ workDir, isolation }));
    expect(isolated.exitCode, isolated.outputTail).toBe(0);
    expect(isolated.outputTail).toMatch(/canary-secret: Permission denied/);
    // stdout and stderr are read from two pipes: on a busy machine `id -u`'s line may come before cat's error.
    const uidLine = isolated.outputTail.split('\n').find((line) => /^\d+$/.test(line.trim()));
    expect(Number(uidLine), isolated.outputTail).toBeGreaterThanOrEqual(1_000);
    // Weakened (the worker's own user, a worktree): the same command reads the canary.
    const weakened = await verify(createCommandVerifier({ workDir: `${workDir}-weak` }));
    expect(weakened.exitCode).toBe(7);
    expect(weakened.outputTail).toContain(FILE_CANARY);
  });
});

describe('an isolated agent that commits nothing on merged upstream revisions', () => {
  requireIsolationHost({ root: true });
  it('fails as having committed nothing (its HEAD is the merge made for it, not its work)', async () => {
    // Two upstream revisions that do not fast-forward into one another: the clone gets a merge commit.
    const upstream: Record<string, string> = {};
    for (const key of ['up1', 'up2']) {
      const revision = await git(scene.repo, ['commit-tree', 'main^{tree}', '-p', 'main', '-m', key]);
      await git(scene.repo, ['update-ref', `refs/heads/test-${key}-${randomUUID().slice(0, 8)}`, revision]);
      upstream[key] = revision;
    }
    const { workDir } = await workerFolders(scene.scratch, FILE_CANARY);
    const runner = createCommandRunner({ workDir, isolation: await resolveAgentIsolation({ sandbox: 'none' }) });
    const claim = { ...claimFor('echo looked around'), upstreamRevisions: upstream };
    const run = runner.run({
      claim,
      repo: scene.repo,
      base: 'main',
      signal: new AbortController().signal,
      log: () => {},
      heartbeat: async () => {},
    });
    await expect(run).rejects.toThrow(/committed nothing/);
  });
});

describe('the outside network when slirp4netns fails under a run', () => {
  requireIsolationHost({ root: true, bubblewrap: true, slirp4netns: true });
  it('kills the sandbox before its command runs and fails the run once, with the reason', async () => {
    const isolation = await resolveAgentIsolation({ network: 'outside' });
    const workspace = await openAgentWorkspace(isolation, []);
    try {
      await mkdir(workspace.checkout);
      await workspace.handOver();
      // A slirp4netns that exits at once: the command must never start, not even without a network.
      const confinement = { ...workspace.confinement, slirp4netns: '/bin/false' };
      const run = runShell('echo ran > ran.txt', {
        cwd: workspace.checkout,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        signal: new AbortController().signal,
        confinement,
      });
      await expect(run).rejects.toThrow(/outside network could not be set up: slirp4netns exited 1/);
      expect(
        await stat(path.join(workspace.checkout, 'ran.txt')).then(
          () => true,
          () => false,
        ),
      ).toBe(false);
    } finally {
      await workspace.close();
    }
  });
});

describe('agentIsolationStatus (for baton doctor) and the start-up warning', () => {
  it('reports a root worker as isolated, with nothing to find: per-run users in the sandbox, on the outside network', async () => {
    expect(process.geteuid?.(), 'run the tests as root (as .ci/run does)').toBe(0);
    const status = await agentIsolationStatus({});
    expect(status).toMatchObject({
      isolated: true,
      workerIsRoot: true,
      user: 'per-run',
      sandbox: 'bubblewrap',
      network: 'outside',
      findings: [],
    });
    expect(status.summary).toMatch(/outside network only \(not the worker's 127\.0\.0\.1\)/);
    expect(isolationWarning(status)).toBeUndefined();
  });

  it('reports agents that run as the worker with no sandbox as a finding, and the worker warns loudly', async () => {
    const status = await agentIsolationStatus({ user: 'worker', sandbox: 'none' });
    expect(status.isolated).toBe(false);
    expect(status.findings).toEqual([expect.stringMatching(/can read the worker's environment/)]);
    expect(isolationWarning(status)).toMatch(/WARNING: agents are NOT isolated from the worker/);
    // The worker says so as it starts (here it then fails for want of a Temporal connection).
    const lines: string[] = [];
    installQuietTemporalRuntime();
    const starting = createBatonWorker({
      connection: undefined as never,
      namespace: 'default',
      db: undefined as never,
      workflowBundle: { code: '' },
      agentIsolation: { user: 'worker', sandbox: 'none' },
      log: (l) => lines.push(l),
    });
    await expect(starting).rejects.toThrow();
    expect(lines).toEqual([
      expect.stringMatching(/WARNING: agents are NOT isolated from the worker[\s\S]*can read the worker's environment/),
    ]);
  });

  it("refuses the outside network where slirp4netns cannot be had, and falls back to the host's by default", async () => {
    const saved = process.env.BATON_SLIRP4NETNS_PATH;
    process.env.BATON_SLIRP4NETNS_PATH = '/nonexistent/slirp4netns';
    try {
      await expect(resolveAgentIsolation({ network: 'outside' })).rejects.toThrow(/network 'outside' does not work here/);
      expect(await resolveAgentIsolation({})).toMatchObject({ sandbox: 'bubblewrap', network: 'host' });
    } finally {
      if (saved === undefined) delete process.env.BATON_SLIRP4NETNS_PATH;
      else process.env.BATON_SLIRP4NETNS_PATH = saved;
    }
  });

  it('refuses what was asked for and cannot be had: no network without the sandbox', async () => {
    await expect(resolveAgentIsolation({ network: 'none', sandbox: 'none' })).rejects.toBeInstanceOf(AgentIsolationUnavailableError);
    const status = await agentIsolationStatus({ network: 'none', sandbox: 'none' });
    expect(status).toMatchObject({ isolated: false, findings: [expect.stringMatching(/network 'none' needs the bubblewrap sandbox/)] });
  });
});
