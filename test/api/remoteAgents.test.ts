// Remote agents (SPEC U7, issue 12): tasks that name a pool are claimed by a worker and offered to
// agents that hold only an API token. Each agent here is a process of its own, with no Postgres or
// Temporal credential in its environment: one speaks plain HTTP, one MCP. Real Postgres, real
// Temporal, a real worker and `baton serve`'s API on its own baton_agent login.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { git } from '../../src/runners/git.js';
import { createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { tokenFor, useAgentServer } from './helpers.js';
import type { RemoteAgentConfig } from './remoteAgent.js';

/** How long a wait on a state may last before it is called a hang (the suite's test timeout). */
const HANG_GUARD_MS = 600_000;

const SCRIPT = fileURLToPath(new URL('./remoteAgent.ts', import.meta.url));
const agents: ChildProcessWithoutNullStreams[] = [];

afterAll(async () => {
  for (const agent of agents) agent.kill('SIGKILL');
});

const workspace = useCommandWorkspace('remote');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });
const api = useAgentServer(() => stack.db);

interface Step {
  step: string;
  [field: string]: any;
}

/** Starts a remote agent process; `steps` fills as it reports, `next(step)` waits for one. */
function remoteAgent(config: Omit<RemoteAgentConfig, 'url'>) {
  // Only what a process needs to run: no DATABASE_URL, PG*, TEMPORAL_* or BATON_* credential.
  // Its token goes in the environment, never in argv (any user may read /proc/<pid>/cmdline).
  const { token, ...rest } = config;
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), REMOTE_AGENT_TOKEN: token };
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, JSON.stringify({ ...rest, url: api.url })], {
    env,
    cwd: process.cwd(),
  });
  agents.push(child);
  const steps: Step[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => steps.push(JSON.parse(line) as Step));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Waits on the agent's state; the deadline is the suite's hang guard, not a speed check.
  const next = (name: string, timeoutMs = HANG_GUARD_MS) =>
    waitFor(
      `the agent's ${name}`,
      async () => {
        const found = steps.find((s) => s.step === name);
        const failed = steps.find((s) => s.step === 'error');
        if (failed) throw Object.assign(new Error(`agent failed: ${failed.message} ${stderr}`), { fatal: true });
        if (!found) throw new Error(`steps so far: ${steps.map((s) => s.step).join(', ') || 'none'}; its stderr: ${stderr || '(none)'}`);
        return found;
      },
      { timeoutMs, intervalMs: 100 },
    );
  return { child, steps, next, exited, env };
}

async function taskEvents(taskId: string) {
  const { rows } = await stack.db.pool.query(
    `SELECT id, kind, actor, fence, details FROM baton.events WHERE subject_kind = 'task' AND subject_id = $1 ORDER BY subject_seq`,
    [taskId],
  );
  return rows as { id: number; kind: string; actor: string; fence: number | null; details: Record<string, unknown> }[];
}

describe('remote agents of a pool', () => {
  it('one over HTTP and one over MCP each claim a pooled task, heartbeat and submit; it is verified and its dependent released', async () => {
    const id = `pool-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { heartbeatTimeoutMs: 10_000, maxAttempts: 2 },
        tasks: [
          {
            key: 'review',
            description: 'review the plan',
            run: { pool: 'reviewers' },
            verify: { command: 'grep -q "reviewed by" review.txt' },
          },
          { key: 'ship', dependsOn: ['review'], run: { pool: 'reviewers' }, verify: { command: 'grep -q "reviewed by" review.txt' } },
        ],
      },
      'test',
    );
    const [httpToken, mcpToken] = await Promise.all(
      ['reviewer-http', 'reviewer-mcp'].map((who) => tokenFor(stack.db, who, ['read', 'notes', 'submit'])),
    );
    const overHttp = remoteAgent({ token: httpToken!.secret, pool: 'reviewers', transport: 'http', behaviour: 'work' });
    const overMcp = remoteAgent({ token: mcpToken!.secret, pool: 'reviewers', transport: 'mcp', behaviour: 'work' });
    expect(Object.keys(overHttp.env).sort()).toEqual(['HOME', 'PATH', 'REMOTE_AGENT_TOKEN']);

    const result = await stack.client.waitForGraph(id);
    expect(result).toMatchObject({ verified: [`${id}/review`, `${id}/ship`], failed: [], blocked: [] });
    expect(await overHttp.exited).toBe(0);
    expect(await overMcp.exited).toBe(0);

    const submitted = [...overHttp.steps, ...overMcp.steps].filter((s) => s.step === 'submit');
    expect(submitted.map((s) => s.ok)).toEqual([true, true]);
    const claimedBy = new Map([...overHttp.steps, ...overMcp.steps].filter((s) => s.step === 'claimed').map((s) => [s.taskId, s.identity]));
    expect([...claimedBy.values()].sort()).toEqual(['reviewer-http', 'reviewer-mcp']);
    for (const key of ['review', 'ship']) {
      const task = await stack.client.task(`${id}/${key}`);
      expect(task.status).toBe('verified');
      const agent = claimedBy.get(task.id)!;
      expect(task.artifact?.revision).toBe(submitted.find((s) => s.body.taskId === task.id)?.revision);
      const kinds = (await taskEvents(task.id)).map((e) => `${e.kind}:${e.actor}`);
      // The worker claims and submits; the agent takes the run from the pool and submits its commit, as itself.
      expect(kinds).toEqual(
        expect.arrayContaining([
          `offered_to_pool:${task.owner}`,
          `taken_from_pool:${agent}`,
          `agent_submitted:${agent}`,
          `submitted:${task.owner}`,
        ]),
      );
      const { rows: notes } = await stack.db.pool.query('SELECT author FROM baton.task_notes WHERE task_id = $1', [task.id]);
      expect(notes.map((n) => n.author)).toEqual([agent]);
    }
    // The dependent was offered to the pool only after its upstream's verification was recorded.
    const reviewVerified = (await taskEvents(`${id}/review`)).find((e) => e.kind === 'verified')!;
    const shipOffered = (await taskEvents(`${id}/ship`)).find((e) => e.kind === 'offered_to_pool')!;
    expect(Number(shipOffered.id)).toBeGreaterThan(Number(reviewVerified.id));
  });

  it('recovers the task of an agent that goes silent after the heartbeat timeout, and refuses its late submit', async () => {
    const id = `silent-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { heartbeatTimeoutMs: 3_000, maxAttempts: 3 },
        tasks: [{ key: 'fix', run: { pool: 'night-shift' }, verify: { command: 'grep -q "reviewed by" review.txt' } }],
      },
      'test',
    );
    const taskId = `${id}/fix`;
    const silentToken = await tokenFor(stack.db, 'sleepy', ['read', 'notes', 'submit']);
    const silent = remoteAgent({ token: silentToken.secret, pool: 'night-shift', transport: 'http', behaviour: 'silent' });
    const claimed = await silent.next('claimed');
    await silent.next('silent');

    // No beat for longer than the timeout: Temporal's heartbeat timeout ends the run and the claim moves on.
    await waitFor(
      'the silent claim to be recovered',
      async () => {
        const task = await stack.client.task(taskId);
        if (task.claimVersion <= claimed.claimVersion) throw new Error(`still claim version ${task.claimVersion}, ${task.status}`);
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 200 },
    );
    const events = await taskEvents(taskId);
    const reclaim = events.find((e) => e.kind === 'reclaimed_after_silence');
    expect(reclaim, JSON.stringify(events.map((e) => e.kind))).toBeDefined();

    const helperToken = await tokenFor(stack.db, 'awake', ['read', 'notes', 'submit']);
    const awake = remoteAgent({ token: helperToken.secret, pool: 'night-shift', transport: 'http', behaviour: 'work' });
    expect((await awake.next('claimed')).claimVersion).toBeGreaterThan(claimed.claimVersion);

    // Now the silent agent wakes up and submits under its old claim: refused, and recorded.
    silent.child.stdin.write('go\n');
    const late = await silent.next('submit');
    expect(late.ok).toBe(false);
    expect(late.body).toMatchObject({ code: 'stale_claim', status: 410 });
    expect(late.body.detail).toMatch(new RegExp(`submit refused for task ${taskId}: sleepy holds claim version ${claimed.claimVersion}`));

    const result = await stack.client.waitForGraph(id);
    expect(result).toMatchObject({ verified: [taskId], failed: [] });
    const task = await stack.client.task(taskId);
    expect(task.artifact?.revision).toBe((await awake.next('submit')).revision);
    expect(task.artifact?.revision).not.toBe(late.revision);
    const refused = (await taskEvents(taskId)).filter((e) => e.kind === 'stale_write_refused' && e.actor === 'sleepy');
    expect(refused.map((e) => [e.fence, e.details.action])).toEqual([[claimed.claimVersion, 'submit']]);
  });

  /**
   * Five pooled tasks on `repo`, each taken by a remote agent that games it one way (T12, S6), and
   * one honest upstream task; returns the graph, the planter (pushes a `.git` folder) and the rest.
   */
  async function gamedPool(repo: string) {
    const id = `gamed-pool-${randomUUID().slice(0, 8)}`;
    const check = { command: 'sh ./check.sh' };
    await stack.client.submitGraph(
      {
        id,
        repo,
        policy: { heartbeatTimeoutMs: 10_000, maxAttempts: 1, onVerificationFailure: 'fail' },
        tasks: [
          { key: 'nothing', run: { pool: 'idlers' }, verify: check },
          { key: 'edits', run: { pool: 'editors' }, verify: check },
          { key: 'up', run: { pool: 'workers' }, verify: check },
          { key: 'skips', run: { pool: 'skippers' }, dependsOn: ['up'], verify: check },
          { key: 'plants', run: { pool: 'planters' }, verify: check },
        ],
      },
      'test',
    );
    const agents = await Promise.all(
      (
        [
          ['idlers', 'idle'],
          ['editors', 'edit-check'],
          ['workers', 'work'],
          ['skippers', 'skip-upstream'],
          ['planters', 'plant-dotgit'],
        ] as const
      ).map(async ([pool, behaviour]) =>
        remoteAgent({
          token: (await tokenFor(stack.db, `pool-${behaviour}`, ['read', 'notes', 'submit'])).secret,
          pool,
          transport: 'http',
          behaviour,
        }),
      ),
    );
    const planter = agents.pop()!;
    for (const agent of agents) expect((await agent.next('submit')).ok).toBe(true);
    return { id, planter };
  }

  /** The gamed tasks are failed, each rejection with its reason, and the honest one verified. */
  async function expectGamedRejected(id: string): Promise<void> {
    const result = await stack.client.waitForGraph(id);
    expect(result.verified).toEqual([`${id}/up`]);
    expect([...result.failed].sort()).toEqual([`${id}/edits`, `${id}/nothing`, `${id}/plants`, `${id}/skips`]);
    const up = await stack.client.task(`${id}/up`);
    for (const [key, reason] of [
      ['nothing', /revision [0-9a-f]{40} adds nothing to its base and pinned upstream revisions/],
      ['edits', /it changes what checks it: check\.sh \(protected: check\.sh, \*\*\/\.gitattributes\)/],
      ['skips', new RegExp(`does not contain upstream up at ${up.artifact!.revision}, its pinned verified revision`)],
    ] as const) {
      const rejected = (await stack.client.events(`${id}/${key}`)).find((e) => e.kind === 'rejected');
      expect(rejected?.reason, key).toMatch(/^baton: artifact check exited 1: /);
      expect(rejected?.reason, key).toMatch(reason);
    }
  }

  it('rejects, with the reason, pooled work that adds nothing, skips its pinned upstream, or rewrites its check, and refuses a pushed .git folder (T12, S6)', async () => {
    const repo = await createScriptedRepo({ 'README.md': '# scratch\n', 'check.sh': 'grep -q "reviewed by" review.txt\n' });
    await chmod(repo, 0o755);
    try {
      const { id, planter } = await gamedPool(repo);
      // The repository refuses the planted folder as a push (receive.fsckObjects, set by the pool
      // runner); the agent never submits, goes silent and its task is recovered and, out of attempts, failed.
      expect(await planter.exited).toBe(1);
      expect(planter.steps.find((s) => s.step === 'error')?.message).toMatch(/hasDotgit/);
      expect(await git(repo, ['fsck', '--no-dangling']).catch((error: Error) => error.message)).not.toMatch(/hasDotgit/);
      await expectGamedRejected(id);
    } finally {
      await rm(repo, { recursive: true, force: true });
    }
  });

  it('on a remote, the same: and the planted .git folder, which the remote took, is refused when the worker fetches it', async () => {
    const source = await createScriptedRepo({ 'README.md': '# scratch\n', 'check.sh': 'grep -q "reviewed by" review.txt\n' });
    const remote = `${source}.git`;
    await git(tmpdir(), ['clone', '--quiet', '--bare', source, remote]);
    try {
      const { id, planter } = await gamedPool(`file://${remote}`);
      // A remote that checks nothing takes the push; the worker's mirror refuses it, and the run fails as the agent's.
      expect((await planter.next('submit')).ok).toBe(true);
      await expectGamedRejected(id);
      const failed = (await stack.client.events(`${id}/plants`)).find((e) => e.kind === 'failed');
      expect(failed?.reason).toMatch(
        /pool-plant-dotgit submitted commit [0-9a-f]{40} on the graph's remote holds objects git refuses \(fsck\): .*hasDotgit/,
      );
      // The honest commit is published on the remote, on its claim's branch.
      const up = await stack.client.task(`${id}/up`);
      expect(await git(remote, ['rev-parse', `refs/heads/baton/${id}/up/v${up.claimVersion}`])).toBe(up.artifact!.revision);
    } finally {
      await rm(source, { recursive: true, force: true });
      await rm(remote, { recursive: true, force: true });
    }
  });
});
