import type { AgentApi } from '../api/agentApi.js';
import type { LocalRun } from '../api/dispatch.js';
import { BatonError } from '../errors.js';
import type { Artifact, Claim } from '../tasks/types.js';
import type { ToolCallInput, ToolCallResult } from '../tools/types.js';

/** What a runner gets for one claim. Identity and fencing are bound by baton, not by the agent. */
export interface RunContext {
  claim: Claim;
  /** Git repository of the graph, if it has one: its path, or this worker's mirror of its remote. */
  repo?: string;
  /** Revision the graph's first tasks start from. */
  base: string;
  /**
   * Brings a revision pushed to the graph's remote into `repo` (one the remote lacks stays
   * missing). Absent when the graph's repository is a path: what is pushed there is in `repo`.
   */
  fetch?(revision: string): Promise<void>;
  /** Fenced heartbeat: extends the lease and stores progress; throws StaleClaimError when the claim is gone. */
  heartbeat(progress: Record<string, unknown>): Promise<void>;
  /** Aborted when Temporal cancels the run or the claim turns out stale: stop the agent now. */
  signal: AbortSignal;
  /** A line for the task's log. */
  log(line: string): void;
  /**
   * X1, X2: an external call through baton's tool gateway, keyed by this task and `step` and
   * fenced on this claim. Absent when the worker has no tools configured.
   */
  callTool?(call: ToolCallInput): Promise<ToolCallResult>;
  /**
   * U3, T5: issues this run's token, bound to this claim (its identity: the task's `run.agent`,
   * else the task id), and returns the agent API a run endpoint serves with it, performing this
   * run's tool calls and taking its agent's progress. (Absent: a runner used without a store, as
   * some tests do; its agent gets no endpoint)
   */
  openAgentApi?(run: Pick<LocalRun, 'callTool' | 'reportProgress'>): Promise<{ api: AgentApi; token: string }>;
  /** The task's heartbeat timeout: a run silent for longer is recovered. (Default: 30 s) */
  heartbeatTimeoutMs?: number;
}

/** Runs an agent for one claim and returns the artifact it produced. */
export interface Runner {
  run(ctx: RunContext): Promise<Artifact>;
  /**
   * The runner calls `heartbeat` only while its agent is alive (it relays a remote agent's
   * beats), so the run's own keep-alive must not tell Temporal it is. (Default: false)
   */
  relaysHeartbeats?: boolean;
}

/** What a verifier checks: the exact artifact, by its revision, with the task's verification. */
export interface VerifyContext {
  taskId: string;
  /** Git repository of the graph, if it has one, holding the artifact's revision: its path, or this worker's mirror of its remote. */
  repo?: string;
  artifact: Artifact;
  verify: { command?: string; function?: string };
  /** Keeps Temporal informed that the verifier is alive. */
  heartbeat(): void;
  signal: AbortSignal;
}

export interface VerificationResult {
  revision: string;
  command: string;
  exitCode: number;
  outputDigest: string;
  outputTail: string;
}

export interface Verifier {
  verify(ctx: VerifyContext): Promise<VerificationResult>;
}

/** Thrown when the agent ran but did not produce an artifact (non-zero exit, no commit). */
export class AgentFailedError extends BatonError {
  override readonly name = 'AgentFailedError';
  readonly code = 'agent_failed';
  constructor(
    readonly taskId: string,
    readonly detail: string,
  ) {
    super(`agent for task ${taskId} failed: ${detail}`);
  }
}
