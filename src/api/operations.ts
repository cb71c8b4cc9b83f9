// The agent API's operations (SPEC U3, U7): one table, served over HTTP (`POST /v1/<name>`), over
// MCP (one tool per operation) and by the `baton` command. Each input schema is declared once here
// and is used to validate HTTP bodies and MCP arguments and to write the OpenAPI document. No
// operation has a field that names the actor: the actor is the token's identity (SPEC T5), and
// every schema is strict, so a request that tries to name one is refused, not ignored.
import { z } from 'zod';
import { describeInputProblems as describeProblems, OBJECT_INPUTS, storableString } from '../objects/objectInput.js';
import { InvalidInputError } from '../errors.js';
import { isStorableText, STORABLE_TEXT_PATTERN, UNSTORABLE_TEXT } from '../storableText.js';
import { MAX_SUBTASKS_PER_TASK, MAX_TASKS_PER_GRAPH } from '../tasks/graphSpec.js';
import { GRAPH_STATES } from '../tasks/states.js';
import type { OperationName, TokenScope } from './operationNames.js';

/** What a token must carry to call an operation; `run` means a run token, bound to one claim. */
type OperationScope = TokenScope | 'run';

/** Longest a `pool.claim` waits for work. */
const POOL_CLAIM_WAIT_SECONDS_MAX = 60;

/** Deepest nesting a JSON value in a call may have (found by fuzzing: deeper values overflowed the stack). */
const JSON_DEPTH_MAX = 64;

/** How deep `value` nests, counted without recursion and without looking further than one level past the limit. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length) {
    const [v, depth] = pending.pop()!;
    deepest = Math.max(deepest, depth);
    if (depth > JSON_DEPTH_MAX || typeof v !== 'object' || v === null) continue;
    for (const child of Object.values(v)) pending.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * Where `input` holds text Postgres cannot store, a string or an object key at any depth, as
 * `progress.a: ...`; undefined when it holds none. Walked without recursion, no deeper than the
 * depth limit (deeper input is refused by the schemas).
 */
function unstorableTextIn(input: unknown): string | undefined {
  const pending: [unknown, string[]][] = [[input, []]];
  while (pending.length) {
    const [value, path] = pending.pop()!;
    const where = path.length ? path.join('.') : 'input';
    if (typeof value === 'string') {
      if (!isStorableText(value)) return `${where}: ${UNSTORABLE_TEXT}`;
    } else if (typeof value === 'object' && value !== null && path.length <= JSON_DEPTH_MAX) {
      for (const [k, child] of Object.entries(value)) {
        if (!isStorableText(k)) return `${where}: a key ${UNSTORABLE_TEXT}`;
        pending.push([child, [...path, k]]);
      }
    }
  }
  return undefined;
}

/**
 * Every string Postgres must store exactly as given. The text of JSON values, keys included, is
 * checked once for the whole input (unstorableTextIn, in parseOperationInput), before the schemas.
 * Object operations take the shared-object schemas (src/objects/objectInput.ts).
 */
const str = () => storableString();
const json = z.unknown().refine((v) => depthOf(v) <= JSON_DEPTH_MAX, `nested deeper than ${JSON_DEPTH_MAX} levels`);
const taskId = str().min(1).max(200);
const graphId = str().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'graph ids are 1 to 63 lowercase letters, digits, _ or -');
/** Why an operator acts: recorded with the change. */
const reason = str().min(1).max(2000);

/** Longest an `events.list` waits for events. */
const EVENTS_WAIT_SECONDS_MAX = 30;

/**
 * What a call does, for MCP's tool annotations (src/api/agentMcp.ts). `read`: nothing a later call
 * sees changes (a refusal is still recorded, and a token's last use). `write`: adds or updates.
 * `destructive`: may take away or overwrite what someone else holds (content, access, a role), or
 * acts outside baton. `idempotent`: the same call again, with the same input, changes nothing more
 * than the first did; it may be refused instead (a compare-and-swap whose version the first call
 * moved, a key the first call took). `openWorld`: it reaches systems outside baton.
 */
type OperationEffect = { kind: 'read' } | { kind: 'write' | 'destructive'; idempotent: boolean; openWorld?: true };

const READ: OperationEffect = { kind: 'read' };
const write = (idempotent: boolean): OperationEffect => ({ kind: 'write', idempotent });
const destructive = (idempotent: boolean): OperationEffect => ({ kind: 'destructive', idempotent });

interface Operation {
  scope: OperationScope;
  /** A short name for people (an MCP tool's title). */
  title: string;
  effect: OperationEffect;
  description: string;
  input: z.ZodType;
}

/** Every operation of the agent API, by name. */
export const OPERATIONS = {
  whoami: {
    scope: 'read',
    title: 'Who am I',
    effect: READ,
    description: "The token's identity, scopes, expiry, and the claim it is bound to, if any.",
    input: z.strictObject({}),
  },
  context: {
    scope: 'run',
    title: 'Task context',
    effect: READ,
    description:
      "Your task: its description, payload and verification, where to work (repo, base), the claim version, the pinned upstream revisions with their notes, and the task's own notes.",
    input: z.strictObject({}),
  },
  heartbeat: {
    scope: 'run',
    title: 'Heartbeat',
    // A beat again says the same: the run is alive, with the progress given.
    effect: write(true),
    description:
      'Tell baton you are alive and, optionally, how far you are. A pooled run must beat more often than its heartbeat timeout or the task is recovered and your later calls are refused.',
    input: z.strictObject({ progress: z.record(z.string(), json).optional() }),
  },
  submit: {
    scope: 'run',
    title: 'Submit work',
    // The same revision again is accepted and changes nothing; another one is refused.
    effect: write(true),
    description:
      'Submit the commit you pushed as the work of a pooled run (fenced on your claim). Someone other than you verifies it before dependent tasks start.',
    input: z.strictObject({
      revision: str().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, 'a full git commit id (40 or 64 lowercase hex digits)'),
    }),
  },
  'tool.call': {
    scope: 'run',
    title: 'Call a tool',
    // Whatever the tool does outside baton; once per task and step, the ledger returns the recorded result after that.
    effect: { kind: 'destructive', idempotent: true, openWorld: true },
    description:
      "An external side effect through the worker's tool gateway, idempotent per task and step: a retry or a successor returns the recorded result instead of calling again. " +
      'With preconditions, it is sent only while each named shared object is still at the version given (checked as it is marked sent); otherwise nothing is sent and it fails with stale_view.',
    input: z.strictObject({
      tool: str().min(1).max(100),
      step: str().min(1).max(100),
      params: json.optional(),
      preconditions: z
        .array(z.strictObject({ object: str().min(1).max(200), version: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) }))
        .max(20)
        .optional(),
    }),
  },
  'task.propose': {
    scope: 'run',
    title: 'Propose subtasks',
    // Proposing the same keys again is refused: they are taken (or waiting in a proposal).
    effect: write(false),
    description:
      "Propose subtasks of your task: each a key, a description, a payload and dependencies (on your task, on each other, on the graph's tasks). " +
      "Each runs and is verified as your task is (its run, verify, tools and concurrency are your task's, never the proposal's). The graph's policy.subtasks decides: " +
      'added and started at once (accept), kept for an operator to accept or decline (review, the default; you hear of the decision in your inbox), or refused. ' +
      `At most ${MAX_SUBTASKS_PER_TASK} per task.`,
    input: z.strictObject({ tasks: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_SUBTASKS_PER_TASK) }),
  },
  'note.add': {
    scope: 'notes',
    title: 'Add a note',
    // Each call adds a note.
    effect: write(false),
    description: "Add a note to a task's discussion (a run token: its own task). A note never claims or releases anything.",
    input: z.strictObject({ text: str().min(1).max(10_000), taskId: taskId.optional() }),
  },
  'notes.list': {
    scope: 'read',
    title: 'List notes',
    effect: READ,
    description: "A task's notes, oldest first (a run token: its own task unless taskId says otherwise).",
    input: z.strictObject({ taskId: taskId.optional() }),
  },
  'pool.claim': {
    scope: 'submit',
    title: 'Claim pooled work',
    // Each call may take another task.
    effect: write(false),
    description:
      "Ask for a task offered to a pool, waiting up to waitSeconds. Returns null, or the task's context and a run token bound to its claim: use that token for heartbeat, submit, notes and objects of the run.",
    input: z.strictObject({
      pool: str().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'pool names are 1 to 63 lowercase letters, digits, _ or -'),
      waitSeconds: z.number().int().min(0).max(POOL_CLAIM_WAIT_SECONDS_MAX).optional(),
    }),
  },
  'object.create': {
    scope: 'objects',
    title: 'Create a shared object',
    // Again: refused with object_exists, nothing changed.
    effect: write(true),
    description: 'Create a shared object; you get write access and administer its grants.',
    input: OBJECT_INPUTS.create,
  },
  'object.grant': {
    scope: 'objects',
    title: 'Grant object access',
    // Sets the access, lowering or revoking (none) what the grantee had.
    effect: destructive(true),
    description: "Set an identity's access to an object you created (none revokes).",
    input: OBJECT_INPUTS.grant,
  },
  'object.reserve': {
    scope: 'objects',
    title: 'Reserve repository paths',
    // Replaces the paths reserved; the same list again changes nothing.
    effect: destructive(true),
    description:
      'Reserve repository paths (globs such as src/api/**) with an object you created, replacing those it reserved (none frees them): a run whose commit changes one fails unless its agent holds the object.',
    input: OBJECT_INPUTS.reserve,
  },
  'object.show': {
    scope: 'read',
    title: 'Show an object',
    effect: READ,
    description: 'Version, token, holder and any open offer, without reading the content.',
    input: OBJECT_INPUTS.show,
  },
  'object.read': {
    scope: 'read',
    title: 'Read an object',
    // Records the version you read, which object.check answers from.
    effect: write(true),
    description: 'The content and its version; records that you read this version.',
    input: OBJECT_INPUTS.read,
  },
  'object.check': {
    scope: 'read',
    title: 'Check an object is current',
    effect: READ,
    description: 'Refused unless the version you last read is current: call it just before an irreversible step.',
    input: OBJECT_INPUTS.check,
  },
  'object.log': {
    scope: 'read',
    title: 'Object event log',
    effect: READ,
    description: "The object's event log, oldest first: who took, wrote, offered or was refused what, when and why.",
    input: OBJECT_INPUTS.log,
  },
  'object.take': {
    scope: 'objects',
    title: 'Take the writer role',
    // Takes the role from its holder, whose token stops working; taking what you hold returns the same token.
    effect: destructive(true),
    description: 'Take the single-writer role now, from whoever holds it; returns your fencing token.',
    input: OBJECT_INPUTS.take,
  },
  'object.write': {
    scope: 'objects',
    title: 'Write an object',
    // Replaces the content; again, the version it names has moved and it is refused.
    effect: destructive(true),
    description: 'Compare-and-swap write naming the version you read and your token.',
    input: OBJECT_INPUTS.write,
  },
  'object.heartbeat': {
    scope: 'objects',
    title: 'Object holder heartbeat',
    effect: write(true),
    description: 'Tell the store you, the holder, are alive.',
    input: OBJECT_INPUTS.heartbeat,
  },
  'object.release': {
    scope: 'objects',
    title: 'Release the writer role',
    // Again: the token it names has moved, and it is refused.
    effect: write(true),
    description: 'Give the role up.',
    input: OBJECT_INPUTS.release,
  },
  'object.offer': {
    scope: 'objects',
    title: 'Offer the writer role',
    // Again: refused while the first offer is open.
    effect: write(true),
    description:
      'Offer the role to a successor at a version; your writes are refused while the offer is open. It reserves nothing: a third party may still take the object.',
    input: OBJECT_INPUTS.offer,
  },
  'object.accept': {
    scope: 'objects',
    title: 'Accept an offered role',
    // Takes only what was offered to you; again, there is no open offer and it is refused.
    effect: write(true),
    description: 'Accept the offer made to you at the version offered, and become the holder.',
    input: OBJECT_INPUTS.accept,
  },
  'object.decline': {
    scope: 'objects',
    title: 'Decline an offered role',
    effect: write(true),
    description: 'Decline the offer made to you.',
    input: OBJECT_INPUTS.decline,
  },
  'object.withdraw': {
    scope: 'objects',
    title: 'Withdraw an offer',
    effect: write(true),
    description: 'Withdraw your open offer.',
    input: OBJECT_INPUTS.withdraw,
  },
  'object.suggest': {
    scope: 'objects',
    title: 'Suggest content',
    // Each call adds a suggestion.
    effect: write(false),
    description: 'Propose new content based on a version; the holder decides.',
    input: OBJECT_INPUTS.suggest,
  },
  'object.approve': {
    scope: 'objects',
    title: 'Approve a suggestion',
    // Replaces the content; again, the suggestion's version has moved and it is refused.
    effect: destructive(true),
    description: 'Apply a suggestion made on the current version (holder only).',
    input: OBJECT_INPUTS.approve,
  },
  'inbox.wait': {
    scope: 'read',
    title: 'Read your inbox',
    // Waits for what concerns you without changing anything.
    effect: READ,
    description:
      'What concerns your identity, from the event log after afterId (0: from the start), oldest first, waiting up to waitSeconds for the first: offers made to you or withdrawn, your offers accepted or declined, roles you held taken over or lost to silence, grants, suggestions on what you hold, your refused calls, decisions on subtasks you proposed, (with approve) tasks awaiting approval, and (with admin) subtasks waiting for an operator. Keep lastId and pass it next time: nothing is lost while you are away.',
    input: z.strictObject({
      afterId: z.number().int().min(0).optional(),
      limit: z.number().int().min(1).max(1000).optional(),
      waitSeconds: z.number().int().min(0).max(EVENTS_WAIT_SECONDS_MAX).optional(),
    }),
  },
  'objects.list': {
    scope: 'read',
    title: 'List shared objects',
    effect: READ,
    description:
      'The shared objects you may view (an admin token: every one) with holder, fencing token, version, silence, open offer and open suggestions; with key, that one and its log.',
    input: OBJECT_INPUTS.show.partial(),
  },
  'graphs.list': {
    scope: 'view',
    title: 'List graphs',
    effect: READ,
    description:
      "Graphs newest first, each with its task count, how many tasks are in each status and its state; narrowed by state, age and a search of the graph's id and submitter. The operator's views need the view scope on a token without note grants, not a run's.",
    input: z.strictObject({
      state: z.enum(GRAPH_STATES).optional(),
      submittedWithinSeconds: z
        .number()
        .int()
        .min(1)
        .max(10 * 365 * 86_400)
        .optional(),
      search: str().max(200).optional(),
      limit: z.number().int().min(1).max(1000).optional(),
    }),
  },
  'graph.show': {
    scope: 'view',
    title: 'Show a graph',
    effect: READ,
    description:
      'A graph (who submitted it, where it works, its policy) and every task: status, owner, claim version, attempts, dependencies.',
    input: z.strictObject({ graphId }),
  },
  'task.show': {
    scope: 'view',
    title: 'Show a task',
    effect: READ,
    description:
      'A task: its artifact, pinned upstream revisions, verifications with their output tails, notes, progress (the agent log tail), tool-call ledger and ownership timeline.',
    input: z.strictObject({ taskId }),
  },
  'events.list': {
    scope: 'view',
    title: 'Follow the event log',
    // Waits for events without changing anything.
    effect: READ,
    description:
      "The event log after afterId, oldest first (of one graph's tasks with graphId), waiting up to waitSeconds for the first; without afterId, no events and the id to follow from. Another's object events show only with view access to the object, refused agent calls only to admin tokens. Ids come from a sequence: an event committed late can fall behind a cursor already past its id.",
    input: z.strictObject({
      afterId: z.number().int().min(0).optional(),
      graphId: graphId.optional(),
      limit: z.number().int().min(1).max(1000).optional(),
      waitSeconds: z.number().int().min(0).max(EVENTS_WAIT_SECONDS_MAX).optional(),
    }),
  },
  'pools.list': {
    scope: 'view',
    title: 'List pools',
    effect: READ,
    description:
      'Per pool: how many of its tasks may run at once (maxRunning, null: no limit), the offers waiting to be taken, the runs taken and not over (agent, last beat), and who took work in the last day.',
    input: z.strictObject({}),
  },
  'tokens.list': {
    scope: 'admin',
    title: 'List tokens',
    effect: READ,
    description: 'The tokens people made, never their secrets, and how many run tokens are live.',
    input: z.strictObject({}),
  },
  'task.cancel': {
    scope: 'admin',
    title: 'Cancel a task',
    // Again: the task is cancelled already and is left as it is.
    effect: destructive(true),
    description:
      "Cancel a task that has not finished, with a reason recorded under your identity; its owner's later writes are refused and its run is stopped. Its dependents stay blocked.",
    input: z.strictObject({ taskId, reason }),
  },
  'graph.cancel': {
    scope: 'admin',
    title: 'Cancel a graph',
    effect: destructive(true),
    description: 'Cancel every unfinished task of a graph, with a reason recorded under your identity, and stop its runs.',
    input: z.strictObject({ graphId, reason }),
  },
  'task.rerun': {
    scope: 'admin',
    title: 'Rerun a task',
    // Again: the task is ready already and nothing changes.
    effect: destructive(true),
    description:
      'Send a verified, stale or failed task round again on its dependencies’ current revisions, with a reason recorded under your identity; dependents verified on its old revision become stale.',
    input: z.strictObject({ taskId, reason }),
  },
  'graph.add': {
    scope: 'admin',
    title: 'Add tasks to a graph',
    // Adding the same tasks again is refused: their keys are taken.
    effect: write(false),
    description:
      "Add tasks to a running graph, as a graph file lists them, each depending on the graph's tasks or on others added with it; validated with the graph's own (every problem named, nothing written), then started. Recorded under your identity.",
    input: z.strictObject({
      graphId,
      tasks: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_TASKS_PER_GRAPH),
    }),
  },
  'approvals.list': {
    scope: 'approve',
    title: 'List approvals waiting',
    effect: READ,
    description:
      'The tasks waiting for a person to approve or reject their artifact (verify.approval), oldest first: the revision, who passed it on, until when the wait lasts and what it decides then.',
    input: z.strictObject({}),
  },
  'task.approve': {
    scope: 'approve',
    title: 'Approve a task',
    // Again: the task no longer awaits approval, and the call is refused.
    effect: destructive(false),
    description:
      "Approve the artifact of a task awaiting approval, recorded as its verification under your identity (never its agent's); dependents are released.",
    input: z.strictObject({ taskId, reason: reason.optional() }),
  },
  'task.reject': {
    scope: 'approve',
    title: 'Reject a task',
    effect: destructive(false),
    description:
      "Reject the artifact of a task awaiting approval, with a reason its agent reads, recorded as its verification under your identity; the graph's onVerificationFailure policy decides what follows.",
    input: z.strictObject({ taskId, reason }),
  },
  'proposals.list': {
    scope: 'view',
    title: 'List proposed subtasks',
    effect: READ,
    description:
      "Subtasks agents proposed that wait for an operator (policy.subtasks: review), oldest first, of one graph with graphId; with all, decided ones too: who proposed them from which task's claim, and each subtask's key, description, payload and dependencies.",
    input: z.strictObject({ graphId: graphId.optional(), all: z.boolean().optional() }),
  },
  'proposal.accept': {
    scope: 'admin',
    title: 'Accept proposed subtasks',
    // Again: the proposal is decided already, and the call is refused.
    effect: write(false),
    description:
      'Accept a waiting proposal: its subtasks are added to the graph under your identity (never the proposing agent’s) and started; they wait for their dependencies like any task.',
    input: z.strictObject({ proposalId: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), reason: reason.optional() }),
  },
  'proposal.decline': {
    scope: 'admin',
    title: 'Decline proposed subtasks',
    effect: write(false),
    description: 'Decline a waiting proposal, with a reason its agent reads in its inbox; nothing is added.',
    input: z.strictObject({ proposalId: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), reason }),
  },
} as const satisfies Record<OperationName, Operation>;

/** What an operation takes, as its schema reads it: the type a TypeScript caller of `callAgentApi` must give. */
export type AgentApiInput<Op extends OperationName> = z.input<(typeof OPERATIONS)[Op]['input']>;

/**
 * The arguments of `operation` from `input`, or InvalidInputError naming every problem. `undefined`
 * (no body, no MCP arguments) is `{}`; anything else must be an object, JSON `null` included.
 */
export function parseOperationInput(operation: OperationName, input: unknown): Record<string, unknown> {
  if (input === null) throw new InvalidInputError(`${operation}: the input is null; send a JSON object ({} when there is nothing to give)`);
  const badText = unstorableTextIn(input);
  if (badText !== undefined) throw new InvalidInputError(`${operation}: ${badText}`);
  const parsed = OPERATIONS[operation].input.safeParse(input ?? {});
  if (!parsed.success) throw new InvalidInputError(`${operation}: ${describeInputProblems(parsed.error)}`);
  return parsed.data as Record<string, unknown>;
}

/** Where an operation's schema keeps the definition of a JSON value it takes (`#/$defs/StorableJson`). */
export const STORABLE_JSON_DEF = 'StorableJson';

/** Any JSON value whose strings and keys are storable text, at any depth. */
function storableJsonSchema(ref: string): Record<string, unknown> {
  const text = { type: 'string', pattern: STORABLE_TEXT_PATTERN };
  return {
    description: `any JSON value nested at most ${JSON_DEPTH_MAX} levels whose strings and keys hold no NUL and no unpaired surrogate`,
    anyOf: [
      { type: 'null' },
      { type: 'boolean' },
      { type: 'number' },
      text,
      { type: 'array', items: { $ref: ref } },
      { type: 'object', propertyNames: text, additionalProperties: { $ref: ref } },
    ],
  };
}

/**
 * The JSON Schema of `operation`'s input, as OpenAPI and MCP publish it: its one-of rules, and the
 * storable-text rule on every string, every key and every JSON value at any depth (S7).
 */
export function operationJsonSchema(operation: OperationName): Record<string, unknown> & { type: 'object'; required?: string[] } {
  const schema = z.toJSONSchema(OPERATIONS[operation].input, { io: 'input', unrepresentable: 'any' }) as ReturnType<
    typeof operationJsonSchema
  >;
  const ref = `#/$defs/${STORABLE_JSON_DEF}`;
  let takesJson = false;
  const visit = (node: unknown): unknown => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return node;
    const entries = Object.entries(node as Record<string, unknown>);
    // A JSON value of any shape (z.unknown) comes out as {}: it is the recursive definition instead.
    if (entries.length === 0) {
      takesJson = true;
      return { $ref: ref };
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries) {
      if (k === 'properties')
        out[k] = Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([name, sub]) => [name, visit(sub)]));
      else if (k === 'additionalProperties' || k === 'items' || k === 'propertyNames') out[k] = visit(v);
      else if (k === 'allOf' || k === 'anyOf' || k === 'oneOf') out[k] = (v as unknown[]).map(visit);
      else out[k] = v;
    }
    // Fixed patterns (keys, pools, revisions) already allow none of it.
    if (out.type === 'string' && out.pattern === undefined) out.pattern = STORABLE_TEXT_PATTERN;
    return out;
  };
  const stated = visit(schema) as ReturnType<typeof operationJsonSchema>;
  return takesJson ? { ...stated, $defs: { [STORABLE_JSON_DEF]: storableJsonSchema(ref) } } : stated;
}

/** One line per problem, each naming where it is; a field that tries to name the actor is told who the actor is. */
function describeInputProblems(error: z.ZodError): string {
  return describeProblems(error, (keys) =>
    keys.some((k) => /actor|owner|identity|as|user/i.test(k)) ? ": the actor is always the token's identity" : '',
  );
}
