// Bindings of the agent door (src/db/functions/agent_door.sql), the agent API's one way into the
// store: `baton.agent_call(secret, operation, args)` authenticates the token and acts as its
// identity; `agent_authenticate` checks the token alone; `agent_operations` says which operations
// it may call; `agent_refusals_summarise` records the refusals of made-up tokens. Each binding is named after the function it calls.
// This module turns the replies into results or baton's typed errors; it never names an actor.
import type { Queryable } from '../db/queryable.js';
import { callStore, callStoreValue } from '../db/storeCall.js';
import { StaleClaimError } from '../errors.js';
import { checkedOutcome, outcomeFromJson, toObjectSnapshot, toObjectState } from '../objects/objectOutcome.js';
import { ForbiddenError, UnauthenticatedError } from './errors.js';
import type { OperationName } from './operationNames.js';

interface AgentCallReply {
  ok: boolean;
  refusal?: string;
  reason?: string;
  identity?: string;
  taskId?: string;
  claimVersion?: number;
  task?: { status: string; owner: string | null; claimVersion: number };
  object?: Record<string, unknown>;
  result?: unknown;
}

const UNAUTHENTICATED = new Set(['unauthenticated', 'revoked', 'expired']);

/**
 * Performs `operation` with the token `secret` through the store, and returns its result: object
 * operations return the object's state (its content too for `object.read`), the rest what the
 * store answered. A refusal is thrown as UnauthenticatedError, ForbiddenError, StaleClaimError
 * or the object store's refusal errors, each already recorded as an event, except that of a token
 * baton did not issue (the API summarises those: src/api/tokenGate.ts).
 */
export async function agentCall(db: Queryable, secret: string, operation: OperationName, args: Record<string, unknown>): Promise<unknown> {
  const reply = await callStoreValue<AgentCallReply>(db, 'agent_call', [secret, operation, JSON.stringify(args)]);
  if (!reply.ok) throw refusalOf(reply, operation);
  if (!reply.object) return reply.result ?? null;
  const row = checkedOutcome(outcomeFromJson(reply.object), {
    key: String(args.key),
    actor: reply.identity!,
    operation: operation.slice('object.'.length),
  });
  if (operation === 'object.log') return reply.result;
  if (operation === 'object.read') return toObjectSnapshot(row);
  if (operation === 'object.suggest') return { suggestionId: Number(row.suggestion_id), state: toObjectState(row) };
  return toObjectState(row);
}

/**
 * Checks the token `secret` and nothing else (`baton.agent_authenticate`): throws UnauthenticatedError
 * for a token baton did not issue, a revoked or an expired one (recorded, except the first).
 * `operation` is recorded with a refusal when it names one.
 */
export async function agentAuthenticate(db: Queryable, secret: string, operation: OperationName | undefined): Promise<void> {
  const reply = await callStoreValue<AgentCallReply>(db, 'agent_authenticate', [secret, operation ?? null]);
  if (!reply.ok) throw refusalOf(reply, operation ?? 'authenticate');
}

/**
 * The operations of `operations` the token `secret` may call, in the order given, as agent_call
 * decides it (`baton.agent_operations`); a refused token throws as `agentAuthenticate` does.
 */
export async function agentOperations(db: Queryable, secret: string, operations: readonly OperationName[]): Promise<OperationName[]> {
  const reply = await callStoreValue<AgentCallReply>(db, 'agent_operations', [secret, operations]);
  if (!reply.ok) throw refusalOf(reply, 'authenticate');
  return reply.result as OperationName[];
}

/** Records one event for `count` calls from `address` refused for tokens baton did not issue, `throttled` of them before the store. */
export async function agentRefusalsSummarise(
  db: Queryable,
  address: string,
  count: number,
  throttled: number,
  windowMs: number,
): Promise<void> {
  await callStore(db, 'agent_refusals_summarise', [address, count, throttled, Math.round(windowMs)]);
}

/** The error for a refusal the store answered. */
function refusalOf(reply: AgentCallReply, operation: string): Error {
  const reason = reply.reason ?? reply.refusal ?? 'refused';
  if (reply.refusal === 'stale_claim') {
    return new StaleClaimError(reply.taskId!, reply.identity!, Number(reply.claimVersion), operation, {
      status: reply.task!.status,
      owner: reply.task!.owner,
      claimVersion: Number(reply.task!.claimVersion),
    });
  }
  if (UNAUTHENTICATED.has(reply.refusal ?? '')) return new UnauthenticatedError(reply.refusal!, reason);
  return new ForbiddenError(reply.refusal ?? 'forbidden', reason);
}
