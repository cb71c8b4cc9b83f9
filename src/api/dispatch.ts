// The agent API's dispatcher: an operation, its validated arguments and the caller's token become
// a store call (src/api/agentDoor.ts), or a tool call and progress for the run an endpoint serves.
// Tokens, rates and input are checked before it is called (src/api/agentApi.ts).
import type { Queryable } from '../db/queryable.js';
import { InvalidInputError } from '../errors.js';
import type { ToolCallInput, ToolCallResult } from '../tools/types.js';
import { agentCall } from './agentDoor.js';
import { ForbiddenError } from './errors.js';
import type { OperationName } from './operationNames.js';
import { newTokenSecret, secretSha256 } from './tokenSecret.js';

/** How often a waiting `pool.claim` looks for work. */
const POOL_CLAIM_POLL_MS = 500;

/** The run a run's own endpoint serves: its claim, its tool calls, its agent's progress. */
export interface LocalRun {
  taskId: string;
  claimVersion: number;
  /** Tool calls through the worker's gateway, fenced on this claim. Absent: the worker has no tools. */
  callTool?(call: ToolCallInput): Promise<ToolCallResult>;
  /** Progress the agent reported; the runner adds it to its own heartbeats. */
  reportProgress(progress: Record<string, unknown>): void;
}

/** Performs `operation` with arguments already validated, as the token `secret`; `signal` tells that its caller has gone. */
type Dispatch = (secret: string, operation: OperationName, args: Record<string, unknown>, signal?: AbortSignal) => Promise<unknown>;

export function createDispatch(db: Queryable, localRun: LocalRun | undefined): Dispatch {
  async function callTool(secret: string, call: ToolCallInput): Promise<ToolCallResult> {
    const run = (await agentCall(db, secret, 'tool.call', {})) as { taskId: string; claimVersion: number };
    if (!localRun)
      throw new InvalidInputError(
        'tool calls are made on the worker that runs the claim: use the endpoint your run gives you ($BATON_URL inside a run); a pooled run has none',
      );
    if (run.taskId !== localRun.taskId || run.claimVersion !== localRun.claimVersion) {
      throw new ForbiddenError('other_run', `this endpoint serves claim version ${localRun.claimVersion} of task ${localRun.taskId} only`);
    }
    if (!localRun.callTool) throw new InvalidInputError("this run's worker has no tools configured");
    return localRun.callTool({ tool: call.tool, step: call.step, params: call.params ?? null });
  }

  async function claimFromPool(secret: string, args: { pool: string; waitSeconds?: number }, signal?: AbortSignal): Promise<unknown> {
    const deadline = Date.now() + (args.waitSeconds ?? 0) * 1000;
    for (;;) {
      // A caller that has gone away must not be handed a run nobody would receive.
      if (signal?.aborted) return null;
      // A fresh secret per attempt: only the one handed out is ever stored, as its hash.
      const runToken = newTokenSecret();
      const claimed = await agentCall(db, secret, 'pool.claim', { pool: args.pool, runSecretSha256: secretSha256(runToken) });
      if (claimed) return { ...(claimed as object), runToken };
      if (Date.now() >= deadline || signal?.aborted) return null;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POOL_CLAIM_POLL_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  return async (secret, operation, args, signal) => {
    switch (operation) {
      case 'tool.call':
        return callTool(secret, args as unknown as ToolCallInput);
      case 'heartbeat': {
        const beat = (await agentCall(db, secret, 'heartbeat', args)) as { taskId: string; pooled: boolean; claimVersion: number };
        const thisRun = localRun && beat.taskId === localRun.taskId && beat.claimVersion === localRun.claimVersion;
        if (thisRun && !beat.pooled && args.progress) localRun.reportProgress(args.progress as Record<string, unknown>);
        return beat;
      }
      case 'pool.claim':
        return claimFromPool(secret, args as { pool: string; waitSeconds?: number }, signal);
      default:
        return agentCall(db, secret, operation, args);
    }
  };
}
