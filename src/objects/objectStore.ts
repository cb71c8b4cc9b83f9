// The shared-object store's TypeScript API (SPEC O1-O6). Each function runs one SQL function from
// src/db/functions/objects*.sql, which enforces the rules and records the events in one transaction.
// `actor` is the authenticated caller (worker configuration, API token, database role), never a
// value taken from content, a prompt or a request field the agent controls (SPEC T5).
// Call these outside a transaction of your own, or commit it after a refusal: rolling back would
// erase the refusal's event.
import type { Queryable } from '../db/queryable.js';
import { callStore, callStoreValue } from '../db/storeCall.js';
import { callObjectFunction, toObjectSnapshot, toObjectState } from './objectOutcome.js';
import { SILENCE_TIMEOUT_MS_DEFAULT, type ObjectAccess, type ObjectContent, type ObjectSnapshot, type ObjectState } from './types.js';
import { checkActor, parseObjectInput, type ObjectOperation } from './objectInput.js';

/**
 * The call as the store and its errors name it, and its input, validated at the boundary (S3): the
 * actor first, then the input by the one object-input schema. `operation` is the store's name for it.
 */
function callOf<O extends ObjectOperation>(actor: string, schema: O, input: unknown, operation: string = schema) {
  const checkedActor = checkActor(actor);
  const args = parseObjectInput(schema, input);
  return { call: { actor: checkedActor, operation, key: args.key }, args };
}

/** Inline content or a reference, as SQL parameters. */
const contentParams = (args: { content?: string; contentRef?: string }): [string | null, string | null] => [
  args.content ?? null,
  args.contentRef ?? null,
];

interface CreateObjectInput {
  key: string;
  /** Initial content (version 1); none means version 0 and no content. */
  content?: string;
  contentRef?: string;
  /** How long the holder may stay silent before losing the role. (Default: 30 s) */
  silenceTimeoutMs?: number;
  /** Access for actors without a grant of their own. The creator always has write. (Default: 'none') */
  defaultAccess?: ObjectAccess;
}

/** Creates a shared object with no holder; throws ObjectExistsError if the key is taken. */
export async function createObject(db: Queryable, actor: string, input: CreateObjectInput): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'create', input);
  const row = await callObjectFunction(db, 'object_create', call, [
    args.silenceTimeoutMs ?? SILENCE_TIMEOUT_MS_DEFAULT,
    args.defaultAccess ?? 'none',
    ...contentParams(args),
  ]);
  return toObjectState(row);
}

/** Sets `grantee`'s access to the object; only its creator may. 'none' revokes. */
export async function grantObjectAccess(
  db: Queryable,
  actor: string,
  input: { key: string; grantee: string; access: ObjectAccess },
): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'grant', input);
  const row = await callObjectFunction(db, 'object_grant', call, [args.grantee, args.access]);
  return toObjectState(row);
}

/** U11: the repository paths the object reserves, replacing those it reserved (none frees them); only its creator may. */
export async function reserveObjectPaths(db: Queryable, actor: string, input: { key: string; paths: string[] }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'reserve', input);
  return toObjectState(await callObjectFunction(db, 'object_reserve', call, [args.paths]));
}

/** U11: for the run of `claimVersion` of `taskId`: the objects reserving paths that its agent does not hold. */
export function objectReservationsFor(db: Queryable, taskId: string, claimVersion: number): Promise<{ key: string; paths: string[] }[]> {
  return callStore<{ key: string; paths: string[] }>(db, 'object_reservations_for', [taskId, claimVersion]);
}

/** U11: records on object `key` that the run's commit changed `paths`, which it reserves; returns the reason the run fails with. */
export function objectPathsRefused(
  db: Queryable,
  key: string,
  run: { taskId: string; claimVersion: number },
  paths: string[],
): Promise<string> {
  return callStoreValue<string>(db, 'object_paths_refused', [key, run.taskId, run.claimVersion, paths]);
}

/** The object's state without its content; does not count as reading it. Needs view access. */
export async function showObject(db: Queryable, actor: string, input: { key: string }): Promise<ObjectState> {
  return toObjectState(await callObjectFunction(db, 'object_show', callOf(actor, 'show', input).call));
}

/** The content and its version; records that `actor` has read this version (O4). Needs view access. */
export async function readObject(db: Queryable, actor: string, input: { key: string }): Promise<ObjectSnapshot> {
  return toObjectSnapshot(await callObjectFunction(db, 'object_read', callOf(actor, 'read', input).call));
}

/**
 * Takes the holder role now, from whoever has it (O2): never waits, bumps the token and records
 * why (taken, taken_over, reclaimed_after_silence). Taking what one already holds changes nothing.
 */
export async function takeObject(db: Queryable, actor: string, input: { key: string; reason?: string }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'take', input);
  const row = await callObjectFunction(db, 'object_take', call, [args.reason ?? null]);
  return toObjectState(row);
}

export type WriteObjectInput = {
  key: string;
  /** The version the writer read. */
  version: number;
  /** The fencing token the writer holds. */
  token: number;
} & ObjectContent;

/**
 * Compare-and-swap write (O3): lands only if `actor` holds the role with `token` and the object is
 * still at `version`; otherwise throws StaleWriteError or HandoffPendingError with the reason.
 */
export async function writeObject(db: Queryable, actor: string, input: WriteObjectInput): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'write', input);
  const row = await callObjectFunction(db, 'object_write', call, [args.version, args.token, ...contentParams(args)]);
  return toObjectState(row);
}

/** Proves the holder is alive; refused (StaleWriteError) once the role has moved. */
export async function heartbeatObject(db: Queryable, actor: string, input: { key: string; token: number }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'heartbeat', input);
  const row = await callObjectFunction(db, 'object_heartbeat', call, [args.token]);
  return toObjectState(row);
}

/** Gives the role up; the token moves so nothing sent later under it lands. */
export async function releaseObject(
  db: Queryable,
  actor: string,
  input: { key: string; token: number; reason?: string },
): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'release', input);
  const row = await callObjectFunction(db, 'object_release', call, [args.token, args.reason ?? null]);
  return toObjectState(row);
}

/**
 * Offers the role to `successor` at `version` (O5). Until it is accepted, declined, withdrawn or
 * overtaken, the giver's writes are refused. No timer ends it.
 */
export async function offerObject(
  db: Queryable,
  actor: string,
  input: { key: string; token: number; version: number; successor: string },
): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'offer', input);
  const row = await callObjectFunction(db, 'object_offer', call, [args.token, args.version, args.successor]);
  return toObjectState(row);
}

/** The named successor accepts the open offer at `version` and becomes the holder with a new token. */
export async function acceptObject(db: Queryable, actor: string, input: { key: string; version: number }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'accept', input);
  const row = await callObjectFunction(db, 'object_accept', call, [args.version]);
  return toObjectState(row);
}

/** The named successor declines the open offer; the giver keeps the role and may write again. */
export async function declineObject(db: Queryable, actor: string, input: { key: string; reason?: string }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'decline', input);
  const row = await callObjectFunction(db, 'object_decline', call, [args.reason ?? null]);
  return toObjectState(row);
}

/** The giver withdraws its open offer and may write again. */
export async function withdrawOffer(db: Queryable, actor: string, input: { key: string; token: number }): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'withdraw', input);
  const row = await callObjectFunction(db, 'object_withdraw', call, [args.token]);
  return toObjectState(row);
}

export type SuggestInput = {
  key: string;
  /** The version the suggestion is based on. */
  baseVersion: number;
  note?: string;
} & ObjectContent;

/** Proposes new content (O6, needs suggest access); nothing changes until the holder approves it. */
export async function suggestObjectChange(
  db: Queryable,
  actor: string,
  input: SuggestInput,
): Promise<{ suggestionId: number; state: ObjectState }> {
  const { call, args } = callOf(actor, 'suggest', input);
  const row = await callObjectFunction(db, 'object_suggest', call, [args.baseVersion, ...contentParams(args), args.note ?? null]);
  return { suggestionId: Number(row.suggestion_id), state: toObjectState(row) };
}

/** The holder applies a suggestion made on the current version; a fenced write like any other. */
export async function approveSuggestion(
  db: Queryable,
  actor: string,
  input: { key: string; token: number; suggestionId: number },
): Promise<ObjectState> {
  const { call, args } = callOf(actor, 'approve', input);
  const row = await callObjectFunction(db, 'object_approve', call, [args.token, args.suggestionId]);
  return toObjectState(row);
}

/**
 * The check to run just before an irreversible step (O4): throws StaleViewError unless the
 * version `actor` last read is the current one.
 */
export async function checkObjectView(db: Queryable, actor: string, input: { key: string }): Promise<ObjectState> {
  return toObjectState(await callObjectFunction(db, 'object_check_view', callOf(actor, 'check', input, 'check_view').call));
}

/** Records the loss of the role for every holder silent past its timeout that nobody has touched since. */
export async function sweepSilentHolders(db: Queryable, actor: string): Promise<{ key: string; silentHolder: string; token: number }[]> {
  const rows = await callStore<{ object_key: string; silent_holder: string; token: number }>(db, 'object_sweep', [checkActor(actor)]);
  return rows.map((r) => ({ key: r.object_key, silentHolder: r.silent_holder, token: Number(r.token) }));
}
