import { describe, expect, it } from 'vitest';
import { eventRead, toolCallRead } from '../../src/db/sql/reads.js';
import { toolCallBegin, toolCallReconcile, toolCallRecord, toolCallSend } from '../../src/db/sql/toolCalls.js';
import { IllegalTransitionError, StaleClaimError, ToolParamsMismatchError } from '../../src/errors.js';
import { paramsHash } from '../../src/tools/paramsHash.js';
import { TOOL_CALL_STATUSES } from '../../src/tools/types.js';
import { useTestDatabase } from '../helpers/db.js';
import { reclaim, runningTask, toolEventKinds } from '../helpers/tools.js';

const db = useTestDatabase();

const call = (params: unknown = { to: 'a@example.com' }) => ({ step: 'send-email', tool: 'mailer', paramsHash: paramsHash(params) });

describe('the tool-call ledger (X1)', () => {
  it('holds the same statuses as the TypeScript list', async () => {
    const { rows } = await db.pool.query('SELECT status FROM baton.tool_call_statuses ORDER BY status');
    expect(rows.map((r) => r.status)).toEqual([...TOOL_CALL_STATUSES].sort());
  });

  it('writes the row before the call (pending), keyed by task and step, with an event in the same transaction', async () => {
    const fence = await runningTask(db.pool);
    const row = await toolCallBegin(db.pool, fence, call());
    expect(row).toMatchObject({
      key: `${fence.taskId}:send-email`,
      status: 'pending',
      attempts: 0,
      owner: 'owner-a',
      claimVersion: fence.claimVersion,
    });
    const again = await toolCallBegin(db.pool, fence, call());
    expect(again.createdAt).toBe(row.createdAt);
    expect(await toolEventKinds(db.pool, fence.taskId)).toEqual(['tool_call_recorded']);
  });

  it('refuses the same key with other parameters or another tool, and changes nothing', async () => {
    const fence = await runningTask(db.pool);
    await toolCallBegin(db.pool, fence, call({ to: 'a@example.com' }));
    const before = await toolCallRead(db.pool, fence.taskId);
    await expect(toolCallBegin(db.pool, fence, call({ to: 'b@example.com' }))).rejects.toThrow(ToolParamsMismatchError);
    await expect(toolCallBegin(db.pool, fence, { ...call(), tool: 'other' })).rejects.toThrow(/first used for tool mailer/);
    expect(await toolCallRead(db.pool, fence.taskId)).toEqual(before);
    expect(await toolEventKinds(db.pool, fence.taskId)).toEqual(['tool_call_recorded']);
  });

  it('hashes parameters canonically: key order does not matter', () => {
    expect(paramsHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(paramsHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(paramsHash({ a: 1 })).not.toBe(paramsHash({ a: 2 }));
  });

  it('refuses a stale owner, records the refusal as an event, and writes nothing', async () => {
    const old = await runningTask(db.pool);
    const current = await reclaim(db.pool, old, 'owner-b');
    await expect(toolCallBegin(db.pool, old, call())).rejects.toThrow(StaleClaimError);
    expect(await toolCallRead(db.pool, old.taskId)).toEqual([]);
    const refusal = (await eventRead(db.pool, 'task', old.taskId)).find((e) => e.kind === 'stale_write_refused');
    expect(refusal).toMatchObject({
      actor: 'owner-a',
      fence: old.claimVersion,
      details: { action: 'tool_call', current_claim_version: current.claimVersion },
    });
  });

  it('refuses a stale owner at every later step too: send, record, reconcile', async () => {
    const old = await runningTask(db.pool);
    await toolCallBegin(db.pool, old, call());
    await toolCallSend(db.pool, old, 'send-email');
    const current = await reclaim(db.pool, old, 'owner-b');
    await expect(toolCallRecord(db.pool, old, 'send-email', { outcome: 'succeeded', result: { id: 1 } })).rejects.toThrow(StaleClaimError);
    await expect(toolCallReconcile(db.pool, old, 'send-email', { finding: 'absent' })).rejects.toThrow(StaleClaimError);
    await expect(toolCallSend(db.pool, old, 'send-email')).rejects.toThrow(StaleClaimError);
    // The old owner's send is still in flight as far as the ledger knows: the new owner reconciles it.
    const [row] = await toolCallRead(db.pool, old.taskId);
    expect(row).toMatchObject({ status: 'sent', owner: 'owner-a', claimVersion: old.claimVersion });
    const reconciled = await toolCallReconcile(db.pool, current, 'send-email', { finding: 'found', result: { id: 1 } });
    expect(reconciled).toMatchObject({ status: 'reconciled_succeeded', result: { id: 1 }, owner: 'owner-b' });
    const event = (await eventRead(db.pool, 'task', old.taskId)).find((e) => e.kind === 'tool_call_reconciled')!;
    expect(event.details).toMatchObject({
      finding: 'found',
      previous_owner: 'owner-a',
      previous_claim_version: old.claimVersion,
      inherited: true,
    });
    expect((await toolEventKinds(db.pool, old.taskId)).filter((k) => k === 'stale_write_refused')).toHaveLength(3);
  });

  it('walks pending -> sent -> unknown -> reconciled_absent -> sent -> succeeded, one event each', async () => {
    const fence = await runningTask(db.pool);
    await toolCallBegin(db.pool, fence, call());
    await toolCallSend(db.pool, fence, 'send-email');
    await toolCallRecord(db.pool, fence, 'send-email', { outcome: 'uncertain', reason: 'timeout' });
    await toolCallReconcile(db.pool, fence, 'send-email', { finding: 'absent' });
    await toolCallSend(db.pool, fence, 'send-email');
    const row = await toolCallRecord(db.pool, fence, 'send-email', { outcome: 'succeeded', result: 'queued' });
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2, result: 'queued' });
    expect(await toolEventKinds(db.pool, fence.taskId)).toEqual([
      'tool_call_recorded',
      'tool_call_started',
      'tool_call_uncertain',
      'tool_call_reconciled',
      'tool_call_started',
      'tool_call_succeeded',
    ]);
  });

  it('never sends an uncertain call again before it is reconciled (the database refuses a blind retry)', async () => {
    const fence = await runningTask(db.pool);
    await toolCallBegin(db.pool, fence, call());
    await toolCallSend(db.pool, fence, 'send-email');
    await expect(toolCallSend(db.pool, fence, 'send-email')).rejects.toThrow(/reconciled .* before it may be sent again/);
    await toolCallRecord(db.pool, fence, 'send-email', { outcome: 'uncertain', reason: '503' });
    await expect(toolCallSend(db.pool, fence, 'send-email')).rejects.toThrow(IllegalTransitionError);
    // A tool that dedupes by key may be sent the same call again, and the ledger says so.
    await toolCallSend(db.pool, fence, 'send-email', { replay: true });
    const started = (await eventRead(db.pool, 'task', fence.taskId)).filter((e) => e.kind === 'tool_call_started');
    expect(started.at(-1)!.details).toMatchObject({ from: 'unknown', replay: true });
  });

  it('never sends a succeeded or finally refused call again', async () => {
    const fence = await runningTask(db.pool);
    await toolCallBegin(db.pool, fence, call());
    await toolCallSend(db.pool, fence, 'send-email');
    await toolCallRecord(db.pool, fence, 'send-email', { outcome: 'succeeded', result: null });
    await expect(toolCallSend(db.pool, fence, 'send-email')).rejects.toThrow(/already took effect/);
    await toolCallBegin(db.pool, fence, { ...call(), step: 'refused' });
    await toolCallSend(db.pool, fence, 'refused');
    await toolCallRecord(db.pool, fence, 'refused', { outcome: 'failed', error: 'HTTP 422', retryable: false });
    await expect(toolCallSend(db.pool, fence, 'refused')).rejects.toThrow(/refused it for good/);
  });

  it('enforces the state machine and keeps rows whoever writes', async () => {
    const fence = await runningTask(db.pool);
    await toolCallBegin(db.pool, fence, call());
    const where = [fence.taskId];
    await expect(db.pool.query("UPDATE baton.tool_calls SET status = 'succeeded' WHERE task_id = $1", where)).rejects.toMatchObject({
      code: 'BT001',
    });
    await expect(
      db.pool.query("UPDATE baton.tool_calls SET params_hash = 'sha256:' || repeat('0', 64) WHERE task_id = $1", where),
    ).rejects.toMatchObject({ code: 'BT001' });
    await expect(db.pool.query('DELETE FROM baton.tool_calls WHERE task_id = $1', where)).rejects.toMatchObject({ code: 'BT004' });
  });
});
