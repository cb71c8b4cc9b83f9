// U11: retention. A finished graph's record (events, notes, tool-call ledger) moves, after an age,
// from the live tables to the archive through baton.retention_apply, and reads on from there; the
// record stays append-only for everything else, and nothing of an archived graph runs again.
import { describe, expect, it } from 'vitest';
import { taskClaim } from '../../src/db/sql/claims.js';
import { taskSetStatus } from '../../src/db/sql/graphs.js';
import { taskNoteAdd, taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { eventRead, toolCallRead } from '../../src/db/sql/reads.js';
import { archiveRead, retentionApply } from '../../src/db/sql/retention.js';
import { toolCallBegin } from '../../src/db/sql/toolCalls.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { IllegalTransitionError, InsufficientPrivilegeError } from '../../src/errors.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { artifact, LEASE_MS } from '../helpers/tasks.js';

const db = useTestDatabase();

/** A graph of one task, verified, with a note and a tool call on record. */
async function finishedGraph(): Promise<{ graphId: string; taskId: string }> {
  const graphId = await insertGraph(db.pool, { work: [] }, { prefix: 'kept' });
  const taskId = taskIdOf(graphId, 'work');
  const claim = (await taskClaim(db.pool, taskId, 'agent', LEASE_MS))!;
  const fence = { taskId, owner: 'agent', claimVersion: claim.claimVersion };
  await taskNoteAdd(db.pool, taskId, 'agent', 'the API returns 200 now', claim.claimVersion);
  await toolCallBegin(db.pool, fence, { step: 'notify', tool: 'slack', paramsHash: `sha256:${'0'.repeat(64)}` });
  await taskSubmit(db.pool, fence, artifact('rev-1'));
  await verificationStart(db.pool, taskId, 'checker');
  await verificationRecord(db.pool, {
    taskId,
    verifier: 'checker',
    claimVersion: claim.claimVersion,
    revision: 'rev-1',
    command: 'check',
    exitCode: 0,
    outputDigest: 'sha256:x',
    outputTail: '',
  });
  return { graphId, taskId };
}

const liveEvents = async (graphId: string) =>
  (
    await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM baton.events WHERE (subject_kind = 'graph' AND subject_id = $1) OR subject_id LIKE $1 || '/%'`,
      [graphId],
    )
  ).rows[0]!.n;

describe('retention (U11)', () => {
  it('moves a finished graph’s events, notes and tool calls to the archive, where they read on; one live event records the move', async () => {
    const { graphId, taskId } = await finishedGraph();
    const before = await eventRead(db.pool, 'graph', graphId, { includeGraphTasks: true });
    const client = await db.login('baton_client');

    // A dry run says what it would move and moves nothing.
    const wouldMove = (await retentionApply(client.pool, { olderThanMs: 0, actor: 'ops', dryRun: true, limit: 1000 })).find(
      (g) => g.graphId === graphId,
    );
    expect(wouldMove).toMatchObject({ events: before.length, notes: 1, toolCalls: 1 });
    expect(await liveEvents(graphId)).toBe(before.length);

    const moved = (await retentionApply(client.pool, { olderThanMs: 0, actor: 'ops', dryRun: false, limit: 1000 })).find(
      (g) => g.graphId === graphId,
    );
    expect(moved).toEqual(wouldMove);
    // Live: only the event that records the move.
    expect(await liveEvents(graphId)).toBe(1);
    const after = await eventRead(client.pool, 'graph', graphId, { includeGraphTasks: true });
    expect(after.slice(0, -1)).toEqual(before);
    expect(after.at(-1)).toMatchObject({ subjectId: graphId, kind: 'archived', actor: 'ops' });
    expect(after.at(-1)!.seq).toBe(before.filter((e) => e.subjectId === graphId).length + 1);
    // The notes and the ledger, from the archive.
    const archived = await archiveRead(client.pool, graphId);
    expect(archived).toMatchObject({ archivedBy: 'ops', events: before.length });
    expect(archived!.notes).toEqual([expect.objectContaining({ task_id: taskId, body: 'the API returns 200 now' })]);
    expect((await toolCallRead(client.pool, graphId)).map((c) => [c.taskId, c.step])).toEqual([[taskId, 'notify']]);
    expect((await db.pool.query('SELECT 1 FROM baton.tool_calls WHERE task_id = $1', [taskId])).rowCount).toBe(0);
    // The task itself stays, verified; nothing of the graph runs again.
    await expect(
      taskSetStatus(client.pool, { taskId, actor: 'ops', to: 'ready', kind: 'rerun_requested', reason: 'again' }),
    ).rejects.toThrow(IllegalTransitionError);
    // Archived once: the next run leaves it alone.
    expect(
      (await retentionApply(client.pool, { olderThanMs: 0, actor: 'ops', dryRun: false, limit: 1000 })).map((g) => g.graphId),
    ).not.toContain(graphId);
  });

  it('leaves a graph that is not finished, and one finished more recently than the age (negative control: the same graph at age 0 moves)', async () => {
    const running = await insertGraph(db.pool, { a: [], b: ['a'] }, { prefix: 'live' });
    const { graphId: recent } = await finishedGraph();
    const client = await db.login('baton_client');
    const hourOld = await retentionApply(client.pool, { olderThanMs: 3_600_000, actor: 'ops', dryRun: false, limit: 1000 });
    expect(hourOld.map((g) => g.graphId)).not.toContain(recent);
    const now = await retentionApply(client.pool, { olderThanMs: 0, actor: 'ops', dryRun: false, limit: 1000 });
    expect(now.map((g) => g.graphId)).toContain(recent);
    expect(now.map((g) => g.graphId)).not.toContain(running);
    expect(await liveEvents(running)).toBeGreaterThan(0);
  });

  it('keeps the record append-only for everything else, whoever asks', async () => {
    const { graphId, taskId } = await finishedGraph();
    // The owner's login itself, outside retention_apply.
    await expect(db.pool.query(`DELETE FROM baton.events WHERE subject_id = $1`, [graphId])).rejects.toMatchObject({ code: 'BT004' });
    await expect(db.pool.query(`DELETE FROM baton.task_notes WHERE task_id = $1`, [taskId])).rejects.toMatchObject({ code: 'BT004' });
    await expect(db.pool.query(`DELETE FROM baton.tool_calls WHERE task_id = $1`, [taskId])).rejects.toMatchObject({ code: 'BT004' });
    // Only the operator's role may archive.
    for (const role of ['baton_worker', 'baton_agent', 'baton_reader'] as const) {
      const login = await db.login(role);
      await expect(retentionApply(login.pool, { olderThanMs: 0, actor: role, dryRun: false, limit: 1 }), role).rejects.toThrow(
        InsufficientPrivilegeError,
      );
    }
    expect(await liveEvents(graphId)).toBeGreaterThan(1);
  });

  it('refuses a negative age and a limit out of range, moving nothing', async () => {
    const client = await db.login('baton_client');
    await expect(retentionApply(client.pool, { olderThanMs: -1, actor: 'ops', dryRun: false, limit: 1 })).rejects.toThrow(
      /the age is 0 or more/,
    );
    await expect(retentionApply(client.pool, { olderThanMs: 0, actor: 'ops', dryRun: false, limit: 0 })).rejects.toThrow(
      /1 to 10000 graphs/,
    );
  });
});
