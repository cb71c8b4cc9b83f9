// A graph whose repository is a git remote (issue 22, part 1): each worker keeps its own mirror in its
// own work folder, the agent's commit is published on the remote on a branch named by task and claim
// version (and only while the claim holds), and a worker that never saw the run verifies it and runs
// its dependent from what it fetches. Real workers, Postgres and Temporal; the remote is a bare
// repository reached by file:// URL, so nothing but git carries commits between the workers.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTaskActivities } from '../../activities/tasks.js';
import { handedBack } from '../../activities/failures.js';
import { claimRelease } from '../../src/db/sql/claims.js';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { eventRead, taskRead } from '../../src/db/sql/reads.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { git } from '../../src/runners/git.js';
import { repositoryMirrors } from '../../src/runners/repository.js';
import type { Runner } from '../../src/runners/types.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { commitAll, createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import { spawnWorkerProcess, type WorkerProcess } from '../../src/testkit/workerProcess.js';
import { graphVerified } from '../helpers/graphStates.js';
import { useTaskStack } from '../helpers/taskStack.js';

const POLICY = { heartbeatTimeoutMs: 10_000, maxAttempts: 2, onVerificationFailure: 'fail' } as const;
/** What an agent may try to learn of the worker's way to the remote: its SSH agent, its askpass, the mirror's config. */
const CREDENTIAL_PROBE =
  'env | grep -c -e SSH_AUTH_SOCK -e GIT_ASKPASS > credential-env.txt; ' +
  '(cat "$MIRRORS"/*/config 2>/dev/null || echo unreadable) > mirror-config.txt';

let scratch: string;
let remote: string;
let remoteUrl: string;
const workDirs = { a: '', b: '' };

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'baton-remote-test-'));
  const source = await createScriptedRepo({ 'README.md': '# remote\n', 'verify.sh': 'test "$(cat work.txt)" = done\n' });
  remote = path.join(scratch, 'remote.git');
  await git(scratch, ['clone', '--quiet', '--bare', source, remote]);
  await rm(source, { recursive: true, force: true });
  remoteUrl = `file://${remote}`;
  workDirs.a = path.join(scratch, 'worker-a');
  workDirs.b = path.join(scratch, 'worker-b');
  // The worker's own ways to a remote that needs credentials: its agents get neither, even when the
  // operator lists them among the variables agents may have.
  process.env.SSH_AUTH_SOCK = path.join(scratch, 'ssh-agent.sock');
  process.env.GIT_ASKPASS = '/bin/false';
  process.env.BATON_AGENT_ENV = 'SSH_AUTH_SOCK,GIT_ASKPASS';
});

afterAll(async () => {
  delete process.env.SSH_AUTH_SOCK;
  delete process.env.GIT_ASKPASS;
  delete process.env.BATON_AGENT_ENV;
  await rm(scratch, { recursive: true, force: true });
});

/** The branches of the remote, by name, with the commits they name. */
async function remoteBranches(): Promise<Record<string, string>> {
  const lines = (await git(remote, ['for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads/'])).split('\n');
  return Object.fromEntries(lines.filter(Boolean).map((line) => line.split(' ') as [string, string]));
}

describe('a graph on a remote, run by one worker and verified by another', () => {
  // Worker A runs the first task, and its verification waits until A shuts down: it is handed back,
  // and worker B (its own work folder, so its own mirror) verifies it and runs the dependent.
  const stack = useTaskStack({
    worker: () => ({
      workDir: workDirs.a,
      identity: `worker-a-${randomUUID().slice(0, 4)}`,
      activityOverrides: {
        batonVerifyTask: async () => {
          const ctx = Context.current();
          const beating = setInterval(() => ctx.heartbeat(), 1_000);
          try {
            await ctx.cancelled;
          } catch {
            // Cancelled: this worker is shutting down.
          } finally {
            clearInterval(beating);
          }
          throw handedBack('worker A shut down before verifying');
        },
      },
    }),
  });
  let workerB: WorkerProcess | undefined;
  afterAll(async () => {
    workerB?.child.kill('SIGKILL');
    await workerB?.exited;
  });

  it('publishes each commit on the remote, and the other worker verifies it and builds on it from its own mirror', async () => {
    const id = `remote-${randomUUID().slice(0, 8)}`;
    const probe = `MIRRORS=${workDirs.a}/mirrors; ${CREDENTIAL_PROBE}`;
    await stack.client.submitGraph(
      {
        id,
        repo: remoteUrl,
        base: 'main',
        policy: POLICY,
        tasks: [
          { key: 'first', run: `${probe}; echo done > work.txt && ${commitAll('first')}`, verify: 'sh ./verify.sh' },
          { key: 'second', run: `echo second > second.txt && ${commitAll('second')}`, verify: 'test -f work.txt', dependsOn: ['first'] },
        ],
      },
      'test',
    );
    await waitFor(
      'the first task to be submitted by worker A',
      async () => {
        const task = await stack.client.task(`${id}/first`);
        if (task.status !== 'submitted') throw new Error(`status ${task.status}`);
      },
      { timeoutMs: 600_000, intervalMs: 100 },
    );
    // B is a process of its own, as on another machine; it shares nothing with A but Postgres, Temporal and the remote.
    workerB = spawnWorkerProcess({
      identity: `worker-b-${randomUUID().slice(0, 4)}`,
      taskQueue: stack.temporal.taskQueue,
      env: stack.workerEnv,
      workflowBundle: inject('workflowBundlePath'),
      workDir: workDirs.b,
    });
    stack.worker.shutdown();

    const tasks = await graphVerified(stack.client, id);
    const first = tasks.find((t) => t.key === 'first')!;
    const second = tasks.find((t) => t.key === 'second')!;
    // Each commit is on the remote, on its claim's branch, and the dependent's contains its upstream's.
    expect(await remoteBranches()).toMatchObject({
      [`baton/${id}/first/v1`]: first.artifact!.revision,
      [`baton/${id}/second/v1`]: second.artifact!.revision,
    });
    await git(remote, ['merge-base', '--is-ancestor', first.artifact!.revision, second.artifact!.revision]);
    // A ran the first task; B, which never saw A's files, verified it and ran the second.
    const events = await eventRead(stack.db.pool, 'graph', id, { includeGraphTasks: true });
    const by = (kind: string, key: string) => events.find((e) => e.kind === kind && e.subjectId === `${id}/${key}`)?.actor;
    expect(by('claimed', 'first')).toBe(stack.worker.identity);
    expect(by('verified', 'first')).toBe(`${workerB.identity}/verifier`);
    expect(by('claimed', 'second')).toBe(workerB.identity);
    // Each worker fetched into a mirror of its own: B's holds A's commit, fetched from the remote.
    for (const dir of [workDirs.a, workDirs.b]) {
      const mirrors = await readdir(path.join(dir, 'mirrors'));
      expect(mirrors).toEqual([expect.stringMatching(/^remote-[0-9a-f]{12}\.git$/)]);
      await git(path.join(dir, 'mirrors', mirrors[0]!), ['cat-file', '-e', `${first.artifact!.revision}^{commit}`]);
    }
    // The agent learnt nothing of how the worker reaches the remote.
    const shown = (file: string) => git(remote, ['show', `${first.artifact!.revision}:${file}`]);
    expect(await shown('credential-env.txt')).toBe('0');
    expect(await shown('mirror-config.txt')).toBe('unreadable');
  });
});

describe('publishing and fetching, activity by activity', () => {
  const stack = useTaskStack();

  /** A graph of one task on `repo`, written to the store alone (no workflow runs it). */
  async function taskOn(repo: string): Promise<string> {
    const id = `publish-${randomUUID().slice(0, 8)}`;
    await graphSubmit(
      stack.db.pool,
      parseGraphSpec({ id, repo, policy: POLICY, tasks: [{ key: 't', run: 'true', verify: 'true' }] }),
      'test',
    );
    return `${id}/t`;
  }

  function activities(runner: Runner, workDir: string) {
    return createTaskActivities({
      db: stack.db.pool,
      identity: 'publishing-worker',
      repositories: repositoryMirrors(path.join(workDir, 'mirrors')),
      runnerFor: () => runner,
      verifierFor: () => expect.unreachable('these tests run only'),
    });
  }

  it('cannot be wedged by a branch someone with push access made first under the name of the next claim', async () => {
    const taskId = await taskOn(remoteUrl);
    const [graphId, key] = taskId.split('/') as [string, string];
    // A pooled agent may push to the remote: it squats the branch the next claim will publish on.
    const squat = await git(remote, ['commit-tree', 'main^{tree}', '-m', 'squatted']);
    await git(remote, ['update-ref', `refs/heads/baton/${graphId}/${key}/v1`, squat]);
    const runner: Runner = {
      async run(ctx) {
        const tree = await git(ctx.repo!, ['rev-parse', `${ctx.base}^{tree}`]);
        const revision = await git(ctx.repo!, ['commit-tree', tree, '-p', ctx.base, '-m', 'the work']);
        return { revision, testCommand: 'true', agentResult: { exitCode: 0, outputDigest: 'sha256:x' } };
      },
    };
    const outcome = await new MockActivityEnvironment().run(activities(runner, path.join(scratch, 'squatted')).batonRunTask, {
      taskId,
      heartbeatTimeoutMs: POLICY.heartbeatTimeoutMs,
      maxAttempts: POLICY.maxAttempts,
    });
    expect(outcome).toMatchObject({ status: 'submitted', claimVersion: 1 });
    const task = await taskRead(stack.db.pool, taskId);
    expect((await remoteBranches())[`baton/${graphId}/${key}/v1`]).toBe(task.artifact!.revision);
  });

  it('publishes nothing for a claim that was lost before the run ended', async () => {
    const taskId = await taskOn(remoteUrl);
    const workDir = path.join(scratch, 'stale-owner');
    // The run commits in the mirror, and meanwhile its claim is recovered (the owner was thought silent).
    const runner: Runner = {
      async run(ctx) {
        const tree = await git(ctx.repo!, ['rev-parse', `${ctx.base}^{tree}`]);
        const revision = await git(ctx.repo!, ['commit-tree', tree, '-p', ctx.base, '-m', 'late work']);
        await claimRelease(stack.db.pool, {
          taskId,
          claimVersion: ctx.claim.claimVersion,
          actor: 'recovery',
          kind: 'reclaimed_after_silence',
          reason: 'test: the owner went silent',
        });
        return { revision, testCommand: 'true', agentResult: { exitCode: 0, outputDigest: 'sha256:x' } };
      },
    };
    const run = new MockActivityEnvironment().run(activities(runner, workDir).batonRunTask, {
      taskId,
      heartbeatTimeoutMs: POLICY.heartbeatTimeoutMs,
      maxAttempts: POLICY.maxAttempts,
    });
    const refusal = await run.then(
      () => expect.unreachable('a lost claim submits nothing'),
      (error: Error) => error,
    );
    expect(Object.keys(await remoteBranches()).filter((b) => b.startsWith(`baton/${taskId}`))).toEqual([]);
    expect(refusal.message).toMatch(/heartbeat refused for task .*: publishing-worker holds claim version 1, but the task is ready/);
    expect((await taskRead(stack.db.pool, taskId)).status).toBe('ready');
  });

  it('gives the claim back, naming the remote, when the remote cannot be reached', async () => {
    // A port nothing listens on: git's own protocol gets "connection refused".
    const unreachable = 'git://127.0.0.1:9/nothing.git';
    const taskId = await taskOn(unreachable);
    const runner: Runner = { run: async () => expect.unreachable('no run starts without its base') };
    const run = new MockActivityEnvironment().run(activities(runner, path.join(scratch, 'unreachable')).batonRunTask, {
      taskId,
      heartbeatTimeoutMs: POLICY.heartbeatTimeoutMs,
      maxAttempts: POLICY.maxAttempts,
    });
    await expect(run).rejects.toThrow(`the graph's remote ${unreachable}`);
    const task = await taskRead(stack.db.pool, taskId);
    expect(task.status).toBe('ready');
    const released = (await eventRead(stack.db.pool, 'task', taskId)).find((e) => e.kind === 'claim_released');
    expect(released?.reason).toContain(`the graph's remote ${unreachable}`);
  });
});
