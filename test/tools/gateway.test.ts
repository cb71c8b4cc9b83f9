import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolCallRead } from '../../src/db/sql/reads.js';
import {
  InvalidInputError,
  StaleClaimError,
  ToolNotAllowedError,
  ToolParamsMismatchError,
  ToolPreconditionFailedError,
  ToolRateLimitedError,
} from '../../src/errors.js';
import { toolCallBegin, toolCallSend } from '../../src/db/sql/toolCalls.js';
import { createObject, grantObjectAccess, showObject, takeObject, writeObject } from '../../src/objects/objectStore.js';
import type { ToolFault } from '../../src/testkit/toolServer.js';
import { spawnToolServer, type ToolServerProcess } from '../../src/testkit/toolServerProcess.js';
import { ToolCallFailedError, ToolOutcomeUnknownError, UnknownToolError } from '../../src/tools/errors.js';
import { createHttpTool } from '../../src/tools/httpTool.js';
import { createToolGateway, toolCallKey, type ToolGateway } from '../../src/tools/toolGateway.js';
import { paramsHash } from '../../src/tools/paramsHash.js';
import type { ToolCallInput } from '../../src/tools/types.js';
import type { Fence } from '../../src/db/storeCall.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { reclaim, runningTask, toolEventKinds } from '../helpers/tools.js';

// A real tool in its own process: resets, hangs and 5xx are real network behaviour.
let db: TestDatabase;
let plain: ToolServerProcess;
let deduping: ToolServerProcess;
let gateway: ToolGateway;

/** Client timeout of the tests' tools: far below the server's hang, so a hang reads as a timeout. */
const TIMEOUT_MS = 400;

const httpTool = (server: ToolServerProcess, options: { lookup?: boolean; idempotent?: boolean } = {}) =>
  createHttpTool({
    url: `${server.url}/effects`,
    lookupUrl: options.lookup === false ? undefined : `${server.url}/effects/{key}`,
    idempotent: options.idempotent,
    timeoutMs: TIMEOUT_MS,
  });

beforeAll(async () => {
  db = await createTestDatabase();
  [plain, deduping] = await Promise.all([spawnToolServer({ hangMs: 5_000 }), spawnToolServer({ idempotent: true, hangMs: 5_000 })]);
  gateway = createToolGateway({
    db: db.pool,
    tools: {
      payments: httpTool(plain),
      blind: httpTool(plain, { lookup: false }),
      deduping: httpTool(deduping, { lookup: false, idempotent: true }),
      down: createHttpTool({ url: 'http://127.0.0.1:9/effects', timeoutMs: TIMEOUT_MS }),
    },
  });
});

afterAll(async () => {
  await Promise.all([plain?.stop(), deduping?.stop()]);
  await db?.drop();
});

/** A running task whose `step` meets `faults` at the tool. */
async function scenario(faults: ToolFault[], server = plain, step = 'charge'): Promise<{ fence: Fence; key: string }> {
  const fence = await runningTask(db.pool);
  const key = toolCallKey(fence.taskId, step);
  if (faults.length) await server.setFaults(key, faults);
  return { fence, key };
}

const effectsOf = async (server: ToolServerProcess, key: string) => (await server.effects()).filter((e) => e.key === key);
const rowOf = async (fence: Fence) => (await toolCallRead(db.pool, fence.taskId))[0]!;

describe('the tool gateway against a real HTTP tool', () => {
  it('makes a call once and answers a repeat from the ledger without sending', async () => {
    const { fence, key } = await scenario([]);
    const first = await gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    expect(first).toMatchObject({ key, status: 'succeeded', sentNow: 1, reconciled: false, result: { key } });
    const again = await gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    expect(again).toMatchObject({ status: 'succeeded', sentNow: 0, attempts: 1, result: first.result });
    expect(await effectsOf(plain, key)).toHaveLength(1);
    expect(await toolEventKinds(db.pool, fence.taskId)).toEqual(['tool_call_recorded', 'tool_call_started', 'tool_call_succeeded']);
  });

  it.each([
    ['drop_after_commit', 'reconciled_succeeded', 1],
    ['error_after_commit', 'reconciled_succeeded', 1],
    ['timeout_before_commit', 'succeeded', 2],
    ['error_before_commit', 'succeeded', 2],
  ] as const)('after %s: asks lookup first, sends again only if absent, one effect', async (fault, status, attempts) => {
    const { fence, key } = await scenario([fault]);
    const result = await gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    expect(result).toMatchObject({ status, attempts, reconciled: true });
    expect(await effectsOf(plain, key)).toHaveLength(1);
    const kinds = await toolEventKinds(db.pool, fence.taskId);
    expect(kinds.slice(0, 4)).toEqual(['tool_call_recorded', 'tool_call_started', 'tool_call_uncertain', 'tool_call_reconciled']);
  });

  it("lets a new owner after a reclaim find the old owner's in-flight call and reconcile it", async () => {
    const { fence: old, key } = await scenario(['hold_after_commit']);
    // Two gateways: the old and the new owner live in different worker processes.
    const oldGateway = createToolGateway({
      db: db.pool,
      tools: { payments: createHttpTool({ url: `${plain.url}/effects`, timeoutMs: 3_000 }) },
    });
    // Its outcome is read at the end; caught from the start, so an early refusal is not an unhandled rejection.
    const oldOutcome = oldGateway.call(old, { tool: 'payments', step: 'charge', params: { amount: 5 } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await expect.poll(() => plain.held(), { timeout: 10_000 }).toContain(key);
    const current = await reclaim(db.pool, old, 'owner-b');
    const result = await gateway.call(current, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    expect(result).toMatchObject({ status: 'reconciled_succeeded', sentNow: 0, reconciled: true, attempts: 1 });
    await plain.release(key);
    // The old owner's answer arrives late; recording it is refused and logged.
    expect(await oldOutcome).toBeInstanceOf(StaleClaimError);
    expect(await effectsOf(plain, key)).toHaveLength(1);
    expect(await rowOf(old)).toMatchObject({ status: 'reconciled_succeeded', owner: 'owner-b' });
    expect(await toolEventKinds(db.pool, old.taskId)).toContain('stale_write_refused');
  });

  it('stops with ToolOutcomeUnknownError when lookup cannot tell, and reconciles on the next call', async () => {
    const { fence, key } = await scenario(['drop_after_commit', 'lookup_unavailable']);
    const input = { tool: 'payments', step: 'charge', params: { amount: 5 } };
    await expect(gateway.call(fence, input)).rejects.toThrow(ToolOutcomeUnknownError);
    expect(await rowOf(fence)).toMatchObject({ status: 'unknown', attempts: 1 });
    expect(await gateway.call(fence, input)).toMatchObject({ status: 'reconciled_succeeded', sentNow: 0 });
    expect(await effectsOf(plain, key)).toHaveLength(1);
  });

  it('never repeats an uncertain call to a tool with neither lookup nor dedupe (at-most-once)', async () => {
    for (const fault of ['drop_after_commit', 'error_before_commit'] as const) {
      const { fence, key } = await scenario([fault]);
      const input = { tool: 'blind', step: 'charge', params: { amount: 5 } };
      await expect(gateway.call(fence, input)).rejects.toThrow(ToolOutcomeUnknownError);
      await expect(gateway.call(fence, input)).rejects.toThrow(ToolOutcomeUnknownError);
      expect(await rowOf(fence)).toMatchObject({ status: 'unknown', attempts: 1 });
      expect(await effectsOf(plain, key)).toHaveLength(fault === 'drop_after_commit' ? 1 : 0);
    }
  });

  it('replays an uncertain call under the same key to a tool that dedupes by key', async () => {
    const { fence, key } = await scenario(['drop_after_commit'], deduping);
    const result = await gateway.call(fence, { tool: 'deduping', step: 'charge', params: { amount: 5 } });
    expect(result).toMatchObject({ status: 'succeeded', attempts: 2, sentNow: 2 });
    expect(await effectsOf(deduping, key)).toHaveLength(1);
  });

  it('deliver twice: a tool that dedupes by key absorbs it; one that ignores the key acts twice (baton cannot prevent that)', async () => {
    const deduped = await scenario(['deliver_twice'], deduping);
    await gateway.call(deduped.fence, { tool: 'deduping', step: 'charge', params: { amount: 5 } });
    expect(await effectsOf(deduping, deduped.key)).toHaveLength(1);
    const ignored = await scenario(['deliver_twice']);
    await gateway.call(ignored.fence, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    expect(await effectsOf(plain, ignored.key)).toHaveLength(2);
  });

  it('takes a definite refusal as final: no resend, the same error on every later call', async () => {
    const { fence } = await scenario(['reject']);
    const input = { tool: 'payments', step: 'charge', params: { amount: 5 } };
    await expect(gateway.call(fence, input)).rejects.toMatchObject({ name: 'ToolCallFailedError', retryable: false });
    await expect(gateway.call(fence, input)).rejects.toThrow(/HTTP 422/);
    expect(await rowOf(fence)).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('treats a refused connection as certain: nothing was sent, so it may be sent again', async () => {
    const { fence } = await scenario([]);
    const error = await gateway.call(fence, { tool: 'down', step: 'charge', params: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolCallFailedError);
    expect(error).toMatchObject({ retryable: true });
    expect(await rowOf(fence)).toMatchObject({ status: 'failed', retryable: true, attempts: 3 });
  });

  it('serialises concurrent calls of one key: one effect, one answer for all', async () => {
    const { fence, key } = await scenario(['drop_after_commit']);
    const calls = Array.from({ length: 5 }, () => gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 } }));
    const results = await Promise.all(calls);
    expect(new Set(results.map((r) => JSON.stringify(r.result))).size).toBe(1);
    expect(await effectsOf(plain, key)).toHaveLength(1);
  });

  it('refuses before sending: an unknown tool, a reused key with other params, a stale claim', async () => {
    const { fence, key } = await scenario([]);
    await expect(gateway.call(fence, { tool: 'nope', step: 'charge', params: {} })).rejects.toThrow(UnknownToolError);
    await gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 } });
    await expect(gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 6 } })).rejects.toThrow(ToolParamsMismatchError);
    await reclaim(db.pool, fence, 'owner-b');
    await expect(gateway.call(fence, { tool: 'payments', step: 'refund', params: {} })).rejects.toThrow(StaleClaimError);
    expect((await plain.effects()).filter((e) => e.key.startsWith(fence.taskId))).toHaveLength(1);
    expect(key).toBe(`${fence.taskId}:charge`);
  });
});

describe('preconditions on shared objects (U11)', () => {
  /** An object `agent` may view, at version 1, held by its creator A; `bump` writes the next version. */
  async function sharedPlan() {
    const key = uniqueObjectKey('plan');
    await createObject(db.pool, 'A', { key, content: 'v1' });
    await grantObjectAccess(db.pool, 'A', { key, grantee: 'agent', access: 'view' });
    const { token } = await takeObject(db.pool, 'A', { key });
    const bump = async () => {
      const { version } = await showObject(db.pool, 'A', { key });
      await writeObject(db.pool, 'A', { key, version, token, content: `v${version + 1}` });
    };
    return { key, bump };
  }
  const at = (object: string, version: number) => [{ object, version }];

  it('sends while the named objects are at their versions; once one moved, refuses a new call, writing and sending nothing', async () => {
    const { fence, key } = await scenario([]);
    const plan = await sharedPlan();
    await gateway.call(fence, { tool: 'payments', step: 'charge', params: { amount: 5 }, preconditions: at(plan.key, 1) }, 'agent');
    expect(await effectsOf(plain, key)).toHaveLength(1);

    await plan.bump();
    const refund = { tool: 'payments', step: 'refund', params: {} };
    const refused = await gateway.call(fence, { ...refund, preconditions: at(plan.key, 1) }, 'agent').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolPreconditionFailedError);
    expect((refused as Error).message).toContain(`object ${plan.key} is at version 2, not 1 as the call expected; nothing was sent`);
    expect((await toolCallRead(db.pool, fence.taskId)).map((r) => r.key)).toEqual([key]);
    expect(await effectsOf(plain, toolCallKey(fence.taskId, 'refund'))).toHaveLength(0);

    // The same step on the version read now goes out: the refusal was the precondition's, and it wrote nothing to reuse.
    await gateway.call(fence, { ...refund, preconditions: at(plan.key, 2) }, 'agent');
    expect(await effectsOf(plain, toolCallKey(fence.taskId, 'refund'))).toHaveLength(1);
    // A call that took effect answers from the ledger whatever moved since: preconditions guard sends only.
    const repeat = await gateway.call(
      fence,
      { tool: 'payments', step: 'charge', params: { amount: 5 }, preconditions: at(plan.key, 1) },
      'agent',
    );
    expect(repeat).toMatchObject({ status: 'succeeded', sentNow: 0 });
  });

  it('checks again in the transaction that marks the call sent: an object that moved after the row was written refuses the send', async () => {
    const { fence } = await scenario([]);
    const plan = await sharedPlan();
    const call = { step: 'charge', tool: 'payments', paramsHash: paramsHash({}), preconditions: at(plan.key, 1), actor: 'agent' };
    await toolCallBegin(db.pool, fence, call);
    await plan.bump();
    await expect(toolCallSend(db.pool, fence, 'charge', call)).rejects.toThrow(ToolPreconditionFailedError);
    expect(await rowOf(fence)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await toolEventKinds(db.pool, fence.taskId)).toEqual(['tool_call_recorded']);
    // Negative control: the same send without its precondition is marked sent.
    expect(await toolCallSend(db.pool, fence, 'charge', { actor: 'agent' })).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it('refuses an object the agent may not view in the words it uses for one that does not exist', async () => {
    const { fence } = await scenario([]);
    const hidden = uniqueObjectKey('hidden');
    await createObject(db.pool, 'A', { key: hidden, content: 'secret' });
    const refusal = async (object: string) => {
      const error = await gateway
        .call(fence, { tool: 'payments', step: 'charge', params: {}, preconditions: at(object, 1) }, 'agent')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolPreconditionFailedError);
      return (error as Error).message.replace(object, '<object>');
    };
    expect(await refusal(hidden)).toBe(await refusal(uniqueObjectKey('missing')));
    expect(await toolCallRead(db.pool, fence.taskId)).toEqual([]);
  });

  it('refuses malformed preconditions as invalid input, writing nothing', async () => {
    const { fence } = await scenario([]);
    const plan = await sharedPlan();
    for (const preconditions of [
      [{ object: plan.key, version: '1' }],
      [{ object: plan.key, version: 1.5 }],
      [{ object: plan.key, version: 1, extra: true }],
      [plan.key],
      Array.from({ length: 21 }, () => ({ object: plan.key, version: 1 })),
    ]) {
      const call = { tool: 'payments', step: 'charge', params: {}, preconditions } as unknown as ToolCallInput;
      await expect(gateway.call(fence, call, 'agent')).rejects.toThrow(InvalidInputError);
    }
    expect(await toolCallRead(db.pool, fence.taskId)).toEqual([]);
  });
});

describe("a tool's rate limit, enforced by the ledger over every task (U11)", () => {
  /** A gateway whose tool `name` (unique to the test: the limit counts every call of a tool) may send `perMinute` calls a minute. */
  const metered = (perMinute: number | undefined) => {
    const name = `metered-${randomUUID().slice(0, 8)}`;
    const tool = createHttpTool({ url: `${plain.url}/effects`, timeoutMs: TIMEOUT_MS, ratePerMinute: perMinute });
    return { name, gateway: createToolGateway({ db: db.pool, tools: { [name]: tool }, rateWaitMs: 0 }) };
  };

  it('refuses a call past the limit whichever task makes it, sending nothing, and lets no racing calls take one place twice', async () => {
    const { name, gateway: limited } = metered(2);
    const tasks = await Promise.all([1, 2, 3, 4].map(() => runningTask(db.pool)));
    await limited.call(tasks[0]!, { tool: name, step: 'a', params: {} });
    const racing = await Promise.all(
      tasks.slice(1).map((fence) =>
        limited.call(fence, { tool: name, step: 'b', params: {} }).then(
          () => 'sent',
          (e: unknown) => e,
        ),
      ),
    );
    expect(racing.filter((o) => o === 'sent')).toHaveLength(1);
    const refused = racing.filter((o) => o !== 'sent') as ToolRateLimitedError[];
    expect(refused).toHaveLength(2);
    for (const error of refused) {
      expect(error).toBeInstanceOf(ToolRateLimitedError);
      expect(error.message).toMatch(new RegExp(`tool ${name} sent 2 calls in the last minute, its rate limit; nothing was sent`));
      expect(error.retryAfterMs).toBeGreaterThan(0);
      expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    const sent = (await plain.effects()).filter((e) => tasks.some((t) => e.key.startsWith(`${t.taskId}:`)));
    expect(sent).toHaveLength(2);
  });

  it('negative control: the same calls to a tool without a limit are all sent', async () => {
    const { name, gateway: free } = metered(undefined);
    const tasks = await Promise.all([1, 2, 3].map(() => runningTask(db.pool)));
    for (const fence of tasks) await free.call(fence, { tool: name, step: 'b', params: {} });
    expect((await plain.effects()).filter((e) => tasks.some((t) => e.key.startsWith(`${t.taskId}:`)))).toHaveLength(3);
  });
});

describe("a task's tool allow-list and call budget, enforced by the ledger (U11)", () => {
  /** A running task whose spec says `tools`, written as the table owner (a graph file would say the same). */
  async function taskWithTools(tools: unknown): Promise<Fence> {
    const fence = await runningTask(db.pool);
    await db.pool.query(`UPDATE baton.tasks SET spec = jsonb_set(spec, '{tools}', $2::jsonb) WHERE id = $1`, [
      fence.taskId,
      JSON.stringify(tools),
    ]);
    return fence;
  }
  const sentFor = async (fence: Fence) => (await plain.effects()).filter((e) => e.key.startsWith(`${fence.taskId}:`)).length;

  it('refuses a tool the allow-list does not name, writing and sending nothing, and makes the calls it names', async () => {
    const fence = await taskWithTools({ allow: ['payments'] });
    const refused = await gateway.call(fence, { tool: 'blind', step: 'notify', params: {} }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolNotAllowedError);
    expect((refused as Error).message).toContain(
      'may call only the tools its spec allows (payments), not blind; nothing was written or sent',
    );
    expect(await toolCallRead(db.pool, fence.taskId)).toEqual([]);
    await gateway.call(fence, { tool: 'payments', step: 'charge', params: {} });
    expect(await sentFor(fence)).toBe(1);
  });

  it('refuses a new call past maxCalls, while a repeat of a call made is answered from the ledger', async () => {
    const fence = await taskWithTools({ maxCalls: 2 });
    await gateway.call(fence, { tool: 'payments', step: 'a', params: {} });
    await gateway.call(fence, { tool: 'payments', step: 'b', params: {} });
    await expect(gateway.call(fence, { tool: 'payments', step: 'c', params: {} })).rejects.toThrow(
      /has made the 2 tool calls its spec allows \(tools\.maxCalls\); nothing was written or sent/,
    );
    expect(await gateway.call(fence, { tool: 'payments', step: 'a', params: {} })).toMatchObject({ status: 'succeeded', sentNow: 0 });
    expect(await sentFor(fence)).toBe(2);
    expect((await toolCallRead(db.pool, fence.taskId)).map((r) => r.key.split(':')[1])).toEqual(['a', 'b']);
  });

  it('refuses a new call once the costs its tools reported reach maxCost; calls that report no cost cost nothing', async () => {
    const fence = await taskWithTools({ maxCost: 5 });
    await gateway.call(fence, { tool: 'payments', step: 'a', params: { cost: 2.5 } });
    await gateway.call(fence, { tool: 'payments', step: 'free', params: {} });
    await gateway.call(fence, { tool: 'payments', step: 'b', params: { cost: 2.5 } });
    const refused = await gateway.call(fence, { tool: 'payments', step: 'c', params: { cost: 0.1 } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolNotAllowedError);
    expect((refused as Error).message).toMatch(
      /has spent 5\.0 of the 5 its spec allows its tool calls \(tools\.maxCost\); nothing was written or sent/,
    );
    // A repeat of a call made answers from the ledger, at no cost.
    expect(await gateway.call(fence, { tool: 'payments', step: 'a', params: { cost: 2.5 } })).toMatchObject({ sentNow: 0 });
    expect(await sentFor(fence)).toBe(3);
    expect((await toolCallRead(db.pool, fence.taskId)).map((r) => r.key.split(':')[1])).toEqual(['a', 'free', 'b']);
  });

  it('negative control: the same calls from a task whose spec says nothing about tools are all made', async () => {
    const fence = await runningTask(db.pool);
    for (const [tool, step] of [
      ['blind', 'notify'],
      ['payments', 'a'],
      ['payments', 'b'],
      ['payments', 'c'],
    ] as const) {
      await gateway.call(fence, { tool, step, params: { cost: 2.5 } });
    }
    expect(await toolCallRead(db.pool, fence.taskId)).toHaveLength(4);
  });

  it('lets no two concurrent calls both take the last one', async () => {
    const fence = await taskWithTools({ maxCalls: 1 });
    const calls = ['x', 'y', 'z'].map((step) =>
      gateway.call(fence, { tool: 'payments', step, params: {} }).then(
        () => 'made',
        (e) => e,
      ),
    );
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => o === 'made')).toHaveLength(1);
    expect(outcomes.filter((o) => o instanceof ToolNotAllowedError)).toHaveLength(2);
    expect(await sentFor(fence)).toBe(1);
  });
});
