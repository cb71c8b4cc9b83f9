// What each agent API operation returns: its result over HTTP and MCP and from `baton api`, typed
// for TypeScript callers of `callAgentApi`. The results the store writes as JSON itself
// (src/db/functions/agent_door.sql, tokens.sql) have schemas here, to which a test holds every
// answer of the store (test/api/operationResults.test.ts); the others are typed where they are
// made (object states in src/objects, tool calls in src/tools).
import { z } from 'zod';
import type { ObjectEvent, ObjectSnapshot, ObjectState } from '../objects/types.js';
import type { ToolCallResult } from '../tools/types.js';
import { GRAPH_STATES, TASK_STATUSES } from '../tasks/states.js';
import { TOKEN_SCOPES, type OperationName } from './operationNames.js';

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

/** An event of the log as the operator's views read it (src/db/functions/agent_views.sql). */
/** An event of one subject's log, as object.log returns it. */
const subjectEvent = z.strictObject({
  seq: int,
  kind: z.string(),
  actor: z.string(),
  at: time,
  /** The claim version (a task's) or fencing token (an object's) the event was written under. */
  fence: int.nullable(),
  version: int.nullable(),
  reason: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});
/** An event of the whole log, with its id and subject. */
const logEvent = subjectEvent.extend({ id: int, subjectKind: z.enum(['task', 'graph', 'object', 'agent']), subjectId: z.string() });

const taskSummary = z.strictObject({
  id: z.string(),
  key: z.string(),
  status: z.enum(TASK_STATUSES),
  owner: z.string().nullable(),
  claimVersion: int,
  attempts: int,
  dependsOn: z.array(z.string()),
  leaseExpired: z.boolean(),
  description: z.string().nullable(),
  pool: z.string().nullable(),
});

/** A token as any view of it shows it (never its secret). */
const tokenFields = {
  id: z.string(),
  identity: z.string(),
  scopes: z.array(z.enum(TOKEN_SCOPES)),
  createdAt: time,
  expiresAt: time.nullable(),
};
/** A token people made: the graphs and tasks whose notes it may use, or null for every task's. */
const noteGrants = z.strictObject({ graphs: z.array(z.string()), tasks: z.array(z.string()) }).nullable();
/** A token people made: the pools it may take work from, or null for any. */
const pools = z.array(z.string()).nullable();

const tokenInfo = z.strictObject({
  ...tokenFields,
  createdBy: z.string(),
  revokedAt: time.nullable(),
  revokedBy: z.string().nullable(),
  lastUsedAt: time.nullable(),
  taskId: z.null(),
  claimVersion: z.null(),
  noteGrants,
  pools,
});

const objectView = z.strictObject({
  key: z.string(),
  version: int,
  token: int,
  holder: z.string().nullable(),
  holderSince: time.nullable(),
  heartbeatAt: time.nullable(),
  silenceTimeoutMs: int,
  silent: z.boolean(),
  defaultAccess: z.string(),
  createdBy: z.string(),
  paths: z.array(z.string()),
  updatedAt: time,
  offer: z.strictObject({ id: int, giver: z.string(), successor: z.string(), version: int, token: int, offeredAt: time }).nullable(),
  suggestions: z.array(
    z.strictObject({ id: int, suggestedBy: z.string(), baseVersion: int, note: z.string().nullable(), createdAt: time }),
  ),
});

/** U11: why an item of an inbox concerns its reader (baton.inbox_reason). */
const INBOX_REASONS = [
  'offer',
  'offer_answered',
  'role_lost',
  'granted',
  'suggestion',
  'refused',
  'approval',
  'proposal',
  'proposal_answered',
] as const;

/** U11: tasks added to a graph, by an operator or as an accepted proposal, with their status. */
const added = z.array(z.strictObject({ taskId: z.string(), status: z.enum(TASK_STATUSES) }));

/** U11: subtasks an agent proposed, waiting for an operator or decided. */
const proposal = z.strictObject({
  id: int,
  graphId: z.string(),
  taskId: z.string(),
  claimVersion: int,
  proposedBy: z.string(),
  proposedAt: time,
  status: z.enum(['pending', 'accepted', 'declined']),
  tasks: z.array(z.strictObject({ key: z.string(), description: z.string(), payload: z.unknown(), dependsOn: z.array(z.string()) })),
  decidedBy: z.string().nullable(),
  decidedAt: time.nullable(),
  reason: z.string().nullable(),
});

/** U11: an approval request of a task, open (no decision) or decided. */
const approval = z.strictObject({
  id: int,
  taskId: z.string(),
  claimVersion: int,
  revision: z.string(),
  requestedBy: z.string(),
  requestedAt: time,
  dueAt: time.nullable(),
  onTimeout: z.enum(['reject', 'fail']),
  decision: z.enum(['approved', 'rejected', 'timed_out', 'cancelled']).nullable(),
  decidedBy: z.string().nullable(),
  decidedAt: time.nullable(),
  reason: z.string().nullable(),
});

/** U11: what a decision on an approval did: the task's status after it, and the dependents it released. */
const decided = z.strictObject({ taskId: z.string(), status: z.enum(TASK_STATUSES), released: z.array(z.string()) });

/** What a cancellation did: the tasks it cancelled, and those it left as they were (finished). */
const cancelled = z.strictObject({
  cancelled: z.array(z.string()),
  left: z.array(z.strictObject({ taskId: z.string(), status: z.enum(TASK_STATUSES) })),
});

/** The results the store writes as JSON, by operation. */
export const STORE_RESULTS = {
  whoami: z.strictObject({
    ...tokenFields,
    /** A run token's task and claim version; null for a token people made. */
    taskId: z.string().nullable(),
    claimVersion: int.nullable(),
    noteGrants: noteGrants.optional(),
    pools: pools.optional(),
  }),
  context: taskContext,
  heartbeat: z.strictObject({ taskId: z.string(), claimVersion: int, pooled: z.boolean(), at: time }),
  submit: z.strictObject({ taskId: z.string(), claimVersion: int, revision: z.string() }),
  'note.add': taskNote,
  'notes.list': z.array(taskNote),
  /** The run taken, with its run token (shown once); null when the pool had no work before the wait ended. */
  'pool.claim': taskContext.extend({ pool: z.string(), runTokenId: z.string(), runToken: z.string() }).nullable(),
  'object.log': z.array(subjectEvent),
  'graphs.list': z.array(
    z.strictObject({
      id: z.string(),
      submittedBy: z.string(),
      submittedAt: time,
      tasks: int,
      counts: z.record(z.enum(TASK_STATUSES), int),
      state: z.enum(GRAPH_STATES),
    }),
  ),
  'graph.show': z.strictObject({
    id: z.string(),
    submittedBy: z.string(),
    submittedAt: time,
    repo: z.string().nullable(),
    base: z.string(),
    policy: z.record(z.string(), z.unknown()),
    tasks: z.array(taskSummary),
  }),
  'task.show': taskSummary.extend({
    graphId: z.string(),
    spec: z.record(z.string(), z.unknown()),
    claimedAt: time.nullable(),
    leaseExpiresAt: time.nullable(),
    /** The last heartbeat's progress: on a worker's run, its host, pid, lines and last lines (`tail`). */
    progress: z.record(z.string(), z.unknown()).nullable(),
    artifact: z.record(z.string(), z.unknown()).nullable(),
    verifiedRevision: z.string().nullable(),
    upstreamRevisions: z.record(z.string(), z.string()),
    verifications: z.array(
      z.strictObject({
        id: int,
        claimVersion: int,
        revision: z.string(),
        command: z.string(),
        exitCode: int,
        passed: z.boolean(),
        verifier: z.string(),
        at: time,
        outputDigest: z.string(),
        outputTail: z.string(),
      }),
    ),
    notes: z.array(taskNote),
    events: z.array(logEvent),
    toolCalls: z.array(
      z.strictObject({
        step: z.string(),
        tool: z.string(),
        status: z.string(),
        /** Its outcome was looked up at the tool after an owner died not knowing it. */
        reconciled: z.boolean(),
        owner: z.string(),
        claimVersion: int,
        attempts: int,
        result: z.unknown(),
        error: z.string().nullable(),
        createdAt: time,
        updatedAt: time,
      }),
    ),
    poolRuns: z.array(
      z.strictObject({
        claimVersion: int,
        pool: z.string(),
        offeredBy: z.string(),
        offeredAt: time,
        agent: z.string().nullable(),
        takenAt: time.nullable(),
        beatAt: time.nullable(),
        revision: z.string().nullable(),
      }),
    ),
    approvals: z.array(approval),
  }),
  'events.list': z.strictObject({ events: z.array(logEvent), lastId: int }),
  'objects.list': z.strictObject({ objects: z.array(objectView), log: z.array(logEvent).optional() }),
  'inbox.wait': z.strictObject({
    items: z.array(logEvent.extend({ why: z.enum(INBOX_REASONS) })),
    lastId: int,
  }),
  'pools.list': z.array(
    z.strictObject({
      pool: z.string(),
      /** U11: at most this many of its tasks run at once (`baton pool limit`); null: no limit. */
      maxRunning: int.nullable(),
      waiting: z.array(z.strictObject({ taskId: z.string(), claimVersion: int, offeredBy: z.string(), offeredAt: time })),
      running: z.array(
        z.strictObject({
          taskId: z.string(),
          claimVersion: int,
          agent: z.string(),
          tokenId: z.string(),
          takenAt: time,
          beatAt: time,
          submitted: z.boolean(),
        }),
      ),
      takers: z.array(z.strictObject({ agent: z.string(), runs: int, lastTakenAt: time })),
    }),
  ),
  'tokens.list': z.strictObject({ tokens: z.array(tokenInfo), liveRunTokens: int }),
  'task.cancel': cancelled,
  'graph.cancel': cancelled,
  'graph.add': z.strictObject({ added }),
  'approvals.list': z.array(approval.extend({ graphId: z.string(), key: z.string(), description: z.string() })),
  'task.approve': decided,
  'task.reject': decided,
  'task.propose': z.strictObject({ proposalId: int, status: z.enum(['pending', 'accepted']), added }),
  'proposals.list': z.array(proposal),
  'proposal.accept': proposal.extend({ added }),
  'proposal.decline': proposal.extend({ added }),
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
  'task.propose': StoreResult<'task.propose'>;
  'note.add': TaskNote;
  'notes.list': TaskNote[];
  'pool.claim': StoreResult<'pool.claim'>;
  'object.create': ObjectState;
  'object.grant': ObjectState;
  'object.reserve': ObjectState;
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
  'graphs.list': StoreResult<'graphs.list'>;
  /** `workflowsQuery`: the Temporal list filter that finds its tasks' workflows. */
  'graph.show': StoreResult<'graph.show'> & { workflowsQuery: string };
  'task.show': StoreResult<'task.show'> & { workflowId: string };
  'events.list': StoreResult<'events.list'>;
  'objects.list': StoreResult<'objects.list'>;
  'inbox.wait': StoreResult<'inbox.wait'>;
  'pools.list': StoreResult<'pools.list'>;
  'tokens.list': StoreResult<'tokens.list'>;
  'task.cancel': StoreResult<'task.cancel'>;
  'graph.cancel': StoreResult<'graph.cancel'>;
  'task.rerun': { taskId: string };
  'graph.add': StoreResult<'graph.add'>;
  'approvals.list': StoreResult<'approvals.list'>;
  'task.approve': StoreResult<'task.approve'>;
  'task.reject': StoreResult<'task.reject'>;
  'proposals.list': StoreResult<'proposals.list'>;
  'proposal.accept': StoreResult<'proposal.accept'>;
  'proposal.decline': StoreResult<'proposal.decline'>;
}

/** An event of the log as the operator's views return it. */
export type LogEvent = z.infer<typeof logEvent>;

/** What `operation` returns: the type `callAgentApi` resolves to. (Every operation has one: the compiler checks.) */
export type AgentApiResult<Op extends OperationName> = AgentApiResults[Op];
