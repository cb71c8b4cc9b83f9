// What each agent API operation returns: its result over HTTP and MCP and from `baton api`, typed
// for TypeScript callers of `callAgentApi`. The results the store writes as JSON itself
// (src/db/functions/agent_door.sql, tokens.sql) have schemas here, to which a test holds every
// answer of the store (test/api/operationResults.test.ts); the others are typed where they are
// made (object states in src/objects, tool calls in src/tools).
import { z } from 'zod';
import type { ObjectEvent, ObjectSnapshot, ObjectState } from '../objects/types.js';
import type { ToolCallResult } from '../tools/types.js';
import type { OperationName } from './operationNames.js';

/** Times are the database's, as ISO 8601 text with their zone. */
const time = z.string();
const int = z.number().int();

const taskNote = z.strictObject({ id: int, author: z.string(), claimVersion: int.nullable(), body: z.string(), at: time });

const taskContext = z.strictObject({
  identity: z.string(),
  taskId: z.string(),
  graphId: z.string(),
  key: z.string(),
  claimVersion: int,
  description: z.string().nullable(),
  /** The task's payload as the graph gives it (JSON). */
  payload: z.unknown(),
  /** The task's verification as the graph gives it (JSON). */
  verify: z.unknown(),
  repo: z.string().nullable(),
  base: z.string(),
  upstream: z.array(z.strictObject({ key: z.string(), taskId: z.string(), revision: z.string().nullable(), notes: z.array(taskNote) })),
  notes: z.array(taskNote),
});

/** The results the store writes as JSON, by operation. */
export const STORE_RESULTS = {
  whoami: z.strictObject({
    id: z.string(),
    identity: z.string(),
    scopes: z.array(z.string()),
    createdAt: time,
    expiresAt: time.nullable(),
    /** A run token's task and claim version; null for a token people made. */
    taskId: z.string().nullable(),
    claimVersion: int.nullable(),
    /** A token people made: the graphs and tasks whose notes it may use, or null for every task's. */
    noteGrants: z
      .strictObject({ graphs: z.array(z.string()), tasks: z.array(z.string()) })
      .nullable()
      .optional(),
  }),
  context: taskContext,
  heartbeat: z.strictObject({ taskId: z.string(), claimVersion: int, pooled: z.boolean(), at: time }),
  submit: z.strictObject({ taskId: z.string(), claimVersion: int, revision: z.string() }),
  'note.add': taskNote,
  'notes.list': z.array(taskNote),
  /** The run taken, with its run token (shown once); null when the pool had no work before the wait ended. */
  'pool.claim': taskContext.extend({ pool: z.string(), runTokenId: z.string(), runToken: z.string() }).nullable(),
  'object.log': z.array(
    z.strictObject({
      seq: int,
      kind: z.string(),
      actor: z.string(),
      at: time,
      fence: int.nullable(),
      version: int.nullable(),
      reason: z.string().nullable(),
      details: z.record(z.string(), z.unknown()),
    }),
  ),
} satisfies Partial<Record<OperationName, z.ZodType>>;

type StoreResult<Op extends keyof typeof STORE_RESULTS> = z.infer<(typeof STORE_RESULTS)[Op]>;

/** A task's note, as `note.add` and `notes.list` return it. */
export type TaskNote = z.infer<typeof taskNote>;
/** What an agent needs to do its task (`context`): the spec, where to work, the pinned upstream revisions with their notes, and its notes. */
export type TaskContext = z.infer<typeof taskContext>;

/** Each operation's result. */
export interface AgentApiResults {
  whoami: StoreResult<'whoami'>;
  context: TaskContext;
  heartbeat: StoreResult<'heartbeat'>;
  submit: StoreResult<'submit'>;
  'tool.call': ToolCallResult;
  'note.add': TaskNote;
  'notes.list': TaskNote[];
  'pool.claim': StoreResult<'pool.claim'>;
  'object.create': ObjectState;
  'object.grant': ObjectState;
  'object.show': ObjectState;
  'object.read': ObjectSnapshot;
  'object.check': ObjectState;
  'object.log': ObjectEvent[];
  'object.take': ObjectState;
  'object.write': ObjectState;
  'object.heartbeat': ObjectState;
  'object.release': ObjectState;
  'object.offer': ObjectState;
  'object.accept': ObjectState;
  'object.decline': ObjectState;
  'object.withdraw': ObjectState;
  'object.suggest': { suggestionId: number; state: ObjectState };
  'object.approve': ObjectState;
}

/** What `operation` returns: the type `callAgentApi` resolves to. (Every operation has one: the compiler checks.) */
export type AgentApiResult<Op extends OperationName> = AgentApiResults[Op];
