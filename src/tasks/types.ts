import type { Json } from '../json.js';
import type { GraphState, TaskStatus } from './states.js';

/** What an agent is asked to do and how its work is checked. */
export interface TaskSpec {
  /** One line for people. */
  description: string;
  /**
   * What to run: a shell command (command runner), a registered function name (function runner),
   * or a pool of remote agents that take the task through the agent API (pool runner). `agent`
   * names the identity the run's agent acts as in the agent API. (Default agent: the task id)
   */
  run: { command?: string; function?: string; pool?: string; agent?: string };
  /**
   * How to verify the artifact: a shell command run in a clean checkout of its commit, or a
   * registered function. `protect` (T12) names the paths the agent may not change (paths or globs,
   * as git pathspecs); the files the command runs are protected whatever it says.
   * (Default protect: none beyond the command's own files). `approval` (U11) makes a person the
   * last check: after the command or function passes (or alone), the task waits until a token with
   * the `approve` scope approves or rejects it. (Default: no approval)
   */
  verify: { command?: string; function?: string; protect?: string[]; approval?: TaskApproval };
  /** Input for the agent, as any JSON value: a function runner reads it as `claim.spec.payload`. Never used for identity or ownership. (Default: none) */
  payload?: Json;
  /**
   * U11: what the task's agent may do through the tool gateway, enforced by the ledger: `allow`
   * the tools it may call (Default: any the worker offers), `maxCalls` how many different calls
   * (steps) it may make over all its runs (Default: no limit), `maxCost` what those calls may cost in
   * all, as the tools report it (a numeric `cost` in a call's result) (Default: no limit).
   */
  tools?: TaskTools;
  /**
   * U11: a key the task shares with other tasks, in any graph (a database, a deploy target, a paid
   * API), and how many of them may run at once; its claim waits for a place. (Default: none)
   */
  concurrency?: TaskConcurrency;
}

export interface TaskConcurrency {
  key: string;
  limit: number;
}

/** U11: an approval gate: how long the task waits for a person, and what a wait that runs out decides. */
export interface TaskApproval {
  /** How long to wait for a decision, in ms. (Default: no limit) */
  timeoutMs?: number;
  /**
   * A wait that runs out is a rejection (`reject`: the graph's onVerificationFailure policy applies)
   * or fails the task (`fail`). (Default: `reject`)
   */
  onTimeout?: 'reject' | 'fail';
}

/** U11: a task's open approval request, as `baton approvals` and the agent API's `approvals.list` show it. */
export interface Approval {
  id: number;
  taskId: string;
  graphId: string;
  key: string;
  description: string;
  claimVersion: number;
  revision: string;
  /** The verifier whose check passed the artifact on to a person. */
  requestedBy: string;
  requestedAt: string;
  /** When the wait runs out, on the database clock. (Default: never) */
  dueAt: string | null;
  onTimeout: 'reject' | 'fail';
}

/** U11: subtasks an agent proposed from its task's claim, waiting for an operator or decided. */
export interface Proposal {
  id: number;
  graphId: string;
  /** The task whose agent proposed them. */
  taskId: string;
  claimVersion: number;
  proposedBy: string;
  proposedAt: string;
  status: 'pending' | 'accepted' | 'declined';
  /** What the agent named of each; the rest of each spec is its proposer's. */
  tasks: { key: string; description: string; payload: unknown; dependsOn: string[] }[];
  decidedBy: string | null;
  decidedAt: string | null;
  reason: string | null;
}

export interface TaskTools {
  allow?: string[];
  maxCalls?: number;
  maxCost?: number;
}

/** What a run produced (T7): the exact revision, the command to check it, and the agent's own result. */
export interface Artifact {
  revision: string;
  testCommand: string;
  agentResult: { exitCode: number; outputDigest: string };
  /** The revision the work started from (after merging pinned upstream revisions). */
  baseRevision?: string;
  /** The commit the graph's base named when the run started; the artifact must contain it (T12). (Default: the base as it is at verification) */
  baseCommit?: string;
}

/** A committed claim, returned before any agent work starts. */
export interface Claim {
  taskId: string;
  graphId: string;
  key: string;
  spec: TaskSpec;
  claimVersion: number;
  leaseExpiresAt: string;
  attempts: number;
  /** Upstream key -> verified revision this task was released against. */
  upstreamRevisions: Record<string, string>;
}

export interface TaskRow {
  id: string;
  graphId: string;
  key: string;
  spec: TaskSpec;
  status: TaskStatus;
  owner: string | null;
  claimVersion: number;
  claimedAt: string | null;
  leaseExpiresAt: string | null;
  /** Whether the lease has run out, by the database clock. */
  leaseExpired: boolean;
  attempts: number;
  progress: Record<string, unknown> | null;
  artifact: Artifact | null;
  verifiedRevision: string | null;
  upstreamRevisions: Record<string, string>;
  dependsOn: string[];
}

/** A graph as `baton graphs` lists it: who submitted it and when, and how far its tasks have got. */
export interface GraphSummary {
  id: string;
  submittedBy: string;
  /** ISO 8601, UTC. */
  submittedAt: string;
  /** How many tasks it has. */
  tasks: number;
  /** How many of its tasks are in each status, every status named (zeros included). */
  counts: Record<TaskStatus, number>;
  state: GraphState;
}

export interface TaskEvent {
  id: number;
  subjectId: string;
  seq: number;
  kind: string;
  actor: string;
  at: string;
  fence: number | null;
  reason: string | null;
  details: Record<string, unknown>;
}
