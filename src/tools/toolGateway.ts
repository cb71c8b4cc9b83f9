import type { Queryable } from '../db/queryable.js';
import { toolCallBegin, toolCallReconcile, toolCallRecord, toolCallSend } from '../db/sql/toolCalls.js';
import type { Fence } from '../db/storeCall.js';
import { InvalidInputError, ToolRateLimitedError } from '../errors.js';
import { ToolCallFailedError, ToolOutcomeUnknownError, UnknownToolError } from './errors.js';
import { paramsHash } from './paramsHash.js';
import {
  TOOL_CALL_DONE,
  type ExecuteOutcome,
  type Json,
  type LookupFinding,
  type ToolAdapter,
  type ToolCallInput,
  type ToolCallResult,
  type ToolCallRow,
} from './types.js';

/** Sends one gateway call may make when the tool keeps reporting that nothing happened. (Default: 3) */
const TOOL_MAX_SENDS_DEFAULT = 3;

/** How long one call waits in all for a place under its tool's rate limit before it is refused. (Default: 60 s) */
const RATE_WAIT_MS_DEFAULT = 60_000;

const STEP_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export interface ToolGatewayOptions {
  db: Queryable;
  /** The tools calls may name, by name. */
  tools: Record<string, ToolAdapter>;
  /** (Default: 3) */
  maxSends?: number;
  /** How long one call waits in all for a place under its tool's rate limit before it is refused (`rate_limited`). (Default: 60 s) */
  rateWaitMs?: number;
}

/**
 * Performs a tool call for the claim `fence`; see `createToolGateway`. `actor` is who asks (the
 * run's agent): the objects a precondition names must be ones it may view. (Default: the owner)
 */
export type CallTool = (fence: Fence, call: ToolCallInput, actor?: string) => Promise<ToolCallResult>;

export interface ToolGateway {
  call: CallTool;
  /** Names of the configured tools. */
  tools: string[];
}

/** The idempotency key of a task's step: the same across retries, reclaims and re-runs (X1). */
export function toolCallKey(taskId: string, step: string): string {
  return `${taskId}:${step}`;
}

/**
 * X1, X2: every external call of a task goes through here. The ledger row is written before the
 * call goes out and marked sent before the request leaves; an uncertain outcome (or a call a
 * previous owner left sent or unknown) is reconciled through the tool's `lookup` before anything is
 * sent again, and only an `absent` finding (or a tool that dedupes by key) allows a new send. A
 * call whose effect is known returns the recorded result without sending. Every ledger write is
 * fenced on the caller's claim: a stale owner gets StaleClaimError and sends nothing more.
 */
export function createToolGateway(options: ToolGatewayOptions): ToolGateway {
  const { db, tools } = options;
  const maxSends = options.maxSends ?? TOOL_MAX_SENDS_DEFAULT;
  const rateWaitMs = options.rateWaitMs ?? RATE_WAIT_MS_DEFAULT;
  // One claim lives in one process; serialising a key here keeps a second concurrent call of the
  // same step from finding the first one `sent` and reconciling a request still in flight.
  const inFlight = new Map<string, Promise<unknown>>();

  async function run(fence: Fence, call: ToolCallInput, adapter: ToolAdapter, hash: string, actor?: string): Promise<ToolCallResult> {
    const key = toolCallKey(fence.taskId, call.step);
    let row = await toolCallBegin(db, fence, {
      step: call.step,
      tool: call.tool,
      paramsHash: hash,
      preconditions: call.preconditions,
      actor,
    });
    let sentNow = 0;
    let reconciled = false;
    let lookedUp = false;
    for (;;) {
      if (TOOL_CALL_DONE.has(row.status)) return done(row);
      switch (row.status) {
        case 'sent':
        case 'unknown': {
          // Asked once per uncertain outcome; a second `unknown` in a row means the tool cannot tell.
          if (lookedUp) {
            if (!adapter.idempotent) throw new ToolOutcomeUnknownError(key, call.tool, row.error ?? 'no answer');
            row = await send(row, { replay: true });
            break;
          }
          row = await toolCallReconcile(db, fence, call.step, await safeLookup(adapter, key));
          reconciled = true;
          lookedUp = true;
          break;
        }
        case 'failed':
          if (!row.retryable) throw new ToolCallFailedError(key, call.tool, row.error ?? 'refused', false);
          row = await send(row);
          break;
        default: // pending (certainly never sent) or reconciled_absent (the tool says it did not happen)
          row = await send(row);
      }
    }

    async function send(current: ToolCallRow, sendOptions: { replay?: boolean } = {}): Promise<ToolCallRow> {
      if (sentNow >= maxSends) {
        // Replays to a deduping tool that never answered leave the outcome open, not failed.
        if (current.status === 'unknown')
          throw new ToolOutcomeUnknownError(key, call.tool, `${sentNow} sends, no answer (last: ${current.error ?? 'none'})`);
        throw new ToolCallFailedError(
          key,
          call.tool,
          `${sentNow} sends did not take effect (last: ${current.error ?? current.status})`,
          true,
        );
      }
      await sendWithinRate({ ...sendOptions, preconditions: call.preconditions, actor, ratePerMinute: adapter.ratePerMinute });
      sentNow++;
      lookedUp = false;
      return toolCallRecord(db, fence, call.step, await safeExecute(adapter, key, call.params));
    }

    /** Marks the call sent; past the tool's rate limit, waits for a place (up to `rateWaitMs` in all), then gives up. */
    async function sendWithinRate(sendOptions: Parameters<typeof toolCallSend>[3]): Promise<void> {
      const giveUpAt = Date.now() + rateWaitMs;
      for (;;) {
        try {
          await toolCallSend(db, fence, call.step, sendOptions);
          return;
        } catch (error) {
          if (!(error instanceof ToolRateLimitedError) || Date.now() + error.retryAfterMs > giveUpAt) throw error;
          await new Promise((r) => setTimeout(r, error.retryAfterMs));
        }
      }
    }

    function done(r: ToolCallRow): ToolCallResult {
      return {
        key,
        tool: call.tool,
        step: call.step,
        status: r.status as ToolCallResult['status'],
        result: r.result,
        attempts: r.attempts,
        sentNow,
        reconciled,
      };
    }
  }

  return {
    tools: Object.keys(tools).sort(),
    async call(fence, call, actor) {
      const adapter = Object.hasOwn(tools, call.tool) ? tools[call.tool] : undefined;
      if (!adapter) throw new UnknownToolError(call.tool, Object.keys(tools).sort());
      if (typeof call.step !== 'string' || !STEP_PATTERN.test(call.step)) {
        throw new InvalidInputError(`step ${JSON.stringify(call.step)}: 1 to 100 letters, digits, dots, dashes or underscores`);
      }
      const hash = paramsHash(call.params);
      const key = toolCallKey(fence.taskId, call.step);
      const previous = inFlight.get(key) ?? Promise.resolve();
      const current = previous.catch(() => undefined).then(() => run(fence, call, adapter, hash, actor));
      inFlight.set(key, current);
      try {
        return await current;
      } finally {
        if (inFlight.get(key) === current) inFlight.delete(key);
      }
    },
  };
}

/** Runs `execute`; anything it throws is an uncertain outcome, never a reason to assume it failed. */
export async function safeExecute(adapter: ToolAdapter, key: string, params: Json): Promise<ExecuteOutcome> {
  try {
    return await adapter.execute(key, params);
  } catch (error) {
    return { outcome: 'uncertain', reason: `adapter threw: ${(error as Error).message ?? String(error)}` };
  }
}

/** Runs `lookup`; a tool without one, or a lookup that throws, cannot tell. */
async function safeLookup(adapter: ToolAdapter, key: string): Promise<LookupFinding> {
  if (!adapter.lookup) return { finding: 'unknown', reason: 'the tool has no lookup' };
  try {
    return await adapter.lookup(key);
  } catch (error) {
    return { finding: 'unknown', reason: `lookup threw: ${(error as Error).message ?? String(error)}` };
  }
}
