import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Queryable } from '../src/db/queryable.js';
import { claimTask as claimTaskSql } from '../src/db/sql/claimTask.js';
import { failAttempt } from '../src/db/sql/failAttempt.js';
import { heartbeatTask } from '../src/db/sql/heartbeatTask.js';
import { recordVerification } from '../src/db/sql/recordVerification.js';
import { releaseClaim, type ReleaseKind } from '../src/db/sql/releaseClaim.js';
import { selectGraph } from '../src/db/sql/selectGraph.js';
import { selectTask } from '../src/db/sql/selectTasks.js';
import { setTaskStatus } from '../src/db/sql/setTaskStatus.js';
import { startVerification } from '../src/db/sql/startVerification.js';
import { submitTask } from '../src/db/sql/submitTask.js';
import { StaleClaimError } from '../src/errors.js';
import { AgentFailedError, type Runner, type Verifier } from '../src/runners/types.js';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import { isolateOwner } from '../src/tasks/isolateOwner.js';
import type { TaskStatus } from '../src/tasks/states.js';

export interface TaskActivityDeps {
  db: Queryable;
  /** This worker's identity: the owner of every claim it takes (T5). Never taken from task input. */
  identity: string;
  /** This worker's own task queue: a claim's run activity is sent there, to the claimant. */
  ownerTaskQueue: string;
  /** Picks the runner for a task spec (command or function). */
  runnerFor(spec: { run: { command?: string; function?: string } }): Runner;
  verifierFor(spec: { verify: { command?: string; function?: string } }): Verifier;
}

/** How often a verification tells Temporal it is alive, whatever the verifier does. */
const VERIFY_KEEPALIVE_MS = 5_000;

/** Identity the verifier records; distinct from the agent's by construction (T7). */
export function verifierIdentity(identity: string): string {
  return `${identity}/verifier`;
}

export interface ClaimSummary {
  claimVersion: number;
  attempts: number;
  ownerTaskQueue: string;
}

/** Activities of the task lifecycle. Inputs and outputs are ids and versions only (S3). */
export function createTaskActivities(deps: TaskActivityDeps) {
  const { db, identity } = deps;
  return {
    /** T3: claims the task for this worker; null when it is not ready. */
    async claimTask(input: { taskId: string; leaseMs: number }): Promise<ClaimSummary | null> {
      const claim = await claimTaskSql(db, input.taskId, identity, input.leaseMs);
      return claim ? { claimVersion: claim.claimVersion, attempts: claim.attempts, ownerTaskQueue: deps.ownerTaskQueue } : null;
    },

    /**
     * Runs the agent for a claim this worker holds, heartbeating to Temporal and (fenced) to
     * Postgres, then submits the artifact (fenced). Runs on the claimant's own task queue.
     */
    async runTask(input: { taskId: string; claimVersion: number; heartbeatTimeoutMs: number; maxAttempts: number }): Promise<{ revision: string }> {
      const fence = { taskId: input.taskId, owner: identity, claimVersion: input.claimVersion };
      const task = await selectTask(db, input.taskId);
      if (task.owner !== identity || task.claimVersion !== input.claimVersion || task.status !== 'running') {
        throw nonRetryable(new StaleClaimError(input.taskId, identity, input.claimVersion, 'run', task), 'StaleClaim');
      }
      const graph = await selectGraph(db, task.graphId);
      const ctx = Context.current();
      // Temporal hears from the run from its first moment (worktree setup can take a while);
      // the runner's own heartbeats add progress and extend the lease in Postgres.
      const keepAlive = setInterval(() => ctx.heartbeat(), Math.max(200, Math.floor(input.heartbeatTimeoutMs / 3)));
      try {
        const artifact = await deps.runnerFor(task.spec).run({
          claim: {
            taskId: task.id,
            graphId: task.graphId,
            key: task.key,
            spec: task.spec,
            claimVersion: task.claimVersion,
            leaseExpiresAt: task.leaseExpiresAt ?? '',
            attempts: task.attempts,
            upstreamRevisions: task.upstreamRevisions,
          },
          repo: graph.repo,
          base: graph.base,
          signal: ctx.cancellationSignal,
          log: () => {},
          heartbeat: async (progress) => {
            ctx.heartbeat(progress);
            try {
              await heartbeatTask(db, fence, input.heartbeatTimeoutMs, progress);
            } catch (error) {
              // A lost claim stops the agent; a database blip does not: Temporal still hears the
              // heartbeat, and the submit is fenced whenever it comes.
              if (error instanceof StaleClaimError) throw error;
              ctx.log.warn('heartbeat not recorded in Postgres', { taskId: input.taskId, error: String(error) });
            }
          },
        });
        await submitTask(db, fence, artifact);
        return { revision: artifact.revision };
      } catch (error) {
        if (error instanceof StaleClaimError) throw nonRetryable(error, 'StaleClaim');
        if (error instanceof AgentFailedError) {
          await failAttempt(db, fence, error.detail, task.attempts < input.maxAttempts).catch((e: unknown) => {
            throw e instanceof StaleClaimError ? nonRetryable(e, 'StaleClaim') : e;
          });
          throw nonRetryable(error, 'AgentFailed');
        }
        throw error;
      } finally {
        clearInterval(keepAlive);
      }
    },

    /**
     * T6: Temporal reported the owner of `claimVersion` silent (or its run failed). Stop its agent
     * where possible, record why, and make the task claimable again. False when it had moved on.
     */
    async recoverTask(input: { taskId: string; claimVersion: number; reason: string; kind?: ReleaseKind }): Promise<boolean> {
      const task = await selectTask(db, input.taskId);
      if (task.status !== 'running' || task.claimVersion !== input.claimVersion) return false;
      const isolation = await isolateOwner(input.taskId, input.claimVersion, task.progress);
      return releaseClaim(db, {
        taskId: input.taskId,
        claimVersion: input.claimVersion,
        actor: identity,
        kind: input.kind ?? 'reclaimed_after_silence',
        reason: input.reason,
        details: { isolation, agentPid: task.progress?.pid ?? null, agentHost: task.progress?.host ?? null },
      });
    },

    /** T7: verifies the exact submitted artifact as someone other than its agent, and releases dependents. */
    async verifyTask(input: { taskId: string }): Promise<{ status: 'verified' | 'rejected'; revision: string; released: string[] }> {
      const verifier = verifierIdentity(identity);
      // A retry after the outcome was recorded (its completion lost on the way to Temporal)
      // returns that outcome instead of verifying twice.
      const current = await selectTask(db, input.taskId);
      if (current.status === 'verified' || current.status === 'rejected') {
        return { status: current.status, revision: current.artifact?.revision ?? '', released: [] };
      }
      const { claimVersion, artifact, spec } = await startVerification(db, input.taskId, verifier);
      const task = await selectTask(db, input.taskId);
      const graph = await selectGraph(db, task.graphId);
      const ctx = Context.current();
      const keepAlive = setInterval(() => ctx.heartbeat(), VERIFY_KEEPALIVE_MS);
      const result = await deps
        .verifierFor(spec)
        .verify({ taskId: input.taskId, repo: graph.repo, artifact, verify: spec.verify, heartbeat: () => ctx.heartbeat(), signal: ctx.cancellationSignal })
        .finally(() => clearInterval(keepAlive));
      const outcome = await recordVerification(db, { taskId: input.taskId, verifier, claimVersion, ...result });
      return { status: outcome.status, revision: artifact.revision, released: outcome.released };
    },

    /** Applies the graph's policy after a rejected verification: run again, or fail the task. */
    async afterRejection(input: { taskId: string; policy: GraphPolicy }): Promise<TaskStatus> {
      const task = await selectTask(db, input.taskId);
      if (task.status !== 'rejected') return task.status; // already decided by an earlier try
      const rerun = input.policy.onVerificationFailure === 'rerun' && task.attempts < input.policy.maxAttempts;
      await setTaskStatus(db, {
        taskId: input.taskId,
        actor: identity,
        to: rerun ? 'ready' : 'failed',
        kind: rerun ? 'rerun_after_rejection' : 'failed',
        reason: rerun
          ? `verification rejected attempt ${task.attempts} of ${input.policy.maxAttempts}; running again`
          : `verification rejected attempt ${task.attempts}; policy ${input.policy.onVerificationFailure}, max attempts ${input.policy.maxAttempts}`,
      });
      return rerun ? 'ready' : 'failed';
    },

    /** Sends a task round again (stale, verified or failed -> ready, on current upstream revisions). */
    async rerunTask(input: { taskId: string; reason: string; kind?: string }): Promise<void> {
      await setTaskStatus(db, { taskId: input.taskId, actor: identity, to: 'ready', kind: input.kind ?? 'rerun_requested', reason: input.reason });
    },

    /** Marks the task cancelled (its workflow was cancelled); a finished task stays as it is. */
    async cancelTask(input: { taskId: string; reason: string }): Promise<void> {
      const task = await selectTask(db, input.taskId);
      if (['verified', 'failed', 'cancelled', 'verifying', 'rejected', 'stale'].includes(task.status)) return;
      await setTaskStatus(db, { taskId: input.taskId, actor: identity, to: 'cancelled', kind: 'cancelled', reason: input.reason });
    },

    /** Gives up on a task whose attempts are used up (ready -> failed), recording why. */
    async failExhaustedTask(input: { taskId: string; reason: string }): Promise<void> {
      await setTaskStatus(db, { taskId: input.taskId, actor: identity, to: 'failed', kind: 'failed', reason: input.reason });
    },

    /** The task's status and attempts, for the workflow's decisions. */
    async readTask(input: { taskId: string }): Promise<{ status: TaskStatus; attempts: number; claimVersion: number; leaseExpired: boolean }> {
      const task = await selectTask(db, input.taskId);
      return { status: task.status, attempts: task.attempts, claimVersion: task.claimVersion, leaseExpired: task.leaseExpired };
    },
  };
}

function nonRetryable(error: Error, type: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(error.message, type);
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;
