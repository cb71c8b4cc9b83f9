// Cancellation (issue 13): cancelling a graph records each unfinished task as cancelled with the
// operator's reason, cancels the runs through Temporal, and leaves no agent process behind, not
// even one that left its process group. Real Postgres, real Temporal, real command agents under
// the worker's default isolation.
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { NotFoundError } from '../../src/errors.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { taskWorkflowId } from '../../src/tasks/taskId.js';

const MARK_ENV = 'BATON_TEST_CANCEL_MARK';

const workspace = useCommandWorkspace('cancel');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });

/** Pids of every process on this host whose environment carries `mark` (root reads any /proc/<pid>/environ). */
async function processesMarked(mark: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`${MARK_ENV}=${mark}`)) found.push(Number(entry));
  }
  return found;
}

describe('cancelling a graph', () => {
  it('kills its running agent (its process group and a setsid escapee), records cancelled with the reason, and cancels its dependents', async () => {
    expect(process.geteuid?.(), "run the tests as root (as .ci/run does): the test reads other users' /proc/<pid>/environ").toBe(0);
    const mark = randomUUID();
    const id = `cancel-${mark.slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { heartbeatTimeoutMs: 10_000, maxAttempts: 1 },
        tasks: [
          // Works "for hours": one sleep in its group, one in a session of its own, then waits. (The
          // shell's own /proc environ is the one it started with, so the sleeps are what carry the mark.)
          {
            key: 'work',
            run: { command: `export ${MARK_ENV}=${mark}; sleep 600 & setsid sleep 600 & echo started; wait` },
            verify: { command: 'true' },
          },
          { key: 'after', dependsOn: ['work'], run: { command: 'true' }, verify: { command: 'true' } },
        ],
      },
      'test',
    );
    await waitFor(
      'both sleeps of the agent',
      async () => {
        const pids = await processesMarked(mark);
        if (pids.length < 2) throw new Error(`${pids.length} marked processes so far`);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(await stack.client.task(`${id}/work`)).toMatchObject({ status: 'running' });
    // A wait given up is given up at once; the graph goes on.
    const giveUp = new AbortController();
    const gaveUp = stack.client.waitForGraph(id, { signal: giveUp.signal }).catch((error: unknown) => error);
    giveUp.abort(new Error('enough waiting'));
    expect(await gaveUp).toMatchObject({ message: 'enough waiting' });
    expect(await stack.client.task(`${id}/work`)).toMatchObject({ status: 'running' });
    const waited = stack.client.waitForGraph(id);

    const outcome = await stack.client.cancelGraph(id, 'operator-ann', 'the plan changed');
    expect(outcome).toEqual({ cancelled: [`${id}/after`, `${id}/work`].sort(), left: [] });
    // The wait ends with the graph: nothing more happens in it.
    expect(await waited).toEqual({ graphId: id, verified: [], failed: [`${id}/after`, `${id}/work`], stale: [], blocked: [] });

    await waitFor(
      'every agent process to be gone',
      async () => {
        const left = await processesMarked(mark);
        if (left.length) throw new Error(`still running: ${left.join(', ')}`);
      },
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    const tasks = await stack.client.graphTasks(id);
    expect(tasks.map((t) => [t.key, t.status])).toEqual([
      ['after', 'cancelled'],
      ['work', 'cancelled'],
    ]);
    // The claim is given back: no lease runs on, and the cancellation names who and why.
    const { rows } = await stack.db.pool.query<{ lease_expires_at: Date | null }>(
      'SELECT lease_expires_at FROM baton.tasks WHERE id = $1',
      [`${id}/work`],
    );
    expect(rows[0]!.lease_expires_at).toBeNull();
    const cancelled = (await stack.client.events(`${id}/work`)).filter((e) => e.kind === 'cancelled');
    expect(cancelled).toEqual([expect.objectContaining({ actor: 'operator-ann', reason: 'the plan changed' })]);
    // Its workflow was cancelled, not left to run to its end.
    const workflow = stack.temporal.client.workflow.getHandle(taskWorkflowId(`${id}/work`));
    await workflow.result().catch(() => {});
    expect((await workflow.describe()).status.name).toBe('CANCELLED');
    // What the cancelled run tried afterwards (a heartbeat in flight) was refused, nothing more.
    const events = await stack.client.events(`${id}/work`);
    const after = events.slice(events.findIndex((e) => e.kind === 'cancelled') + 1);
    expect(after.filter((e) => e.kind !== 'stale_write_refused')).toEqual([]);
  });

  it('leaves a finished task as it is and says so; an unknown graph is an error', async () => {
    const id = `cancel-done-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        tasks: [
          { key: 'quick', run: { command: `echo done > done.txt && ${commitAll('done')}` }, verify: { command: 'test -f done.txt' } },
        ],
      },
      'test',
    );
    await stack.client.waitForGraph(id);
    expect(await stack.client.cancelGraph(id, 'operator-ann', 'too late')).toEqual({
      cancelled: [],
      left: [{ taskId: `${id}/quick`, status: 'verified' }],
    });
    expect((await stack.client.events(`${id}/quick`)).some((e) => e.kind === 'cancelled')).toBe(false);
    await expect(stack.client.cancelGraph(`nope-${randomUUID().slice(0, 8)}`, 'operator-ann', 'x')).rejects.toBeInstanceOf(NotFoundError);
  });
});
