import { createHash } from 'node:crypto';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { createAgentApi } from '../src/api/agentApi.js';
import type { WorkflowControl } from '../src/api/dispatch.js';
import { newTokenSecret, secretSha256 } from '../src/api/tokenSecret.js';
import type { Queryable } from '../src/db/queryable.js';
import { claimRelease, taskClaim } from '../src/db/sql/claims.js';
import { taskRerunStale, taskSetStatus } from '../src/db/sql/graphs.js';
import { taskFailAttempt, taskHeartbeat, taskSubmit } from '../src/db/sql/ownerWrites.js';
import { graphReadTasks, taskRead } from '../src/db/sql/reads.js';
import { runTokenIssue } from '../src/db/sql/tokens.js';
import { approvalDecide, approvalDueInMs, approvalRequest, verificationRecord, verificationStart } from '../src/db/sql/verification.js';
import { batonHome } from '../src/config.js';
import { IllegalTransitionError, InvalidInputError, StaleClaimError } from '../src/errors.js';
import { checkArtifact } from '../src/runners/artifactCheck.js';
import { runBranch } from '../src/runners/git.js';
import { repositoryMirrors, type RepositoryMirrors } from '../src/runners/repository.js';
import { AgentFailedError, type Runner, type VerificationResult, type Verifier } from '../src/runners/types.js';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import { runAgentIdentity } from '../src/tasks/taskId.js';
import { isolateOwner } from '../src/runners/isolation/isolateOwner.js';
import { reservedPathRefusal } from '../src/runners/reservedPaths.js';
import { TERMINAL_STATUSES, type TaskStatus } from '../src/tasks/states.js';
import { workflowControl } from '../src/workflowControl.js';
import type { TaskRow, TaskSpec } from '../src/tasks/types.js';
import { handedBack, shuttingDown, withActivityFailures } from './failures.js';

export interface TaskActivityDeps {
  db: Queryable;
  /** This worker's identity: the owner of every claim it takes (T5). Never taken from task input. */
  identity: string;
  /** Picks the runner for a task spec (command, function or pool). */
  runnerFor(spec: Pick<TaskSpec, 'run'>): Runner;
  verifierFor(spec: { verify: { command?: string; function?: string } }): Verifier;
  /** T12: what an artifact must be before anything of it is verified. (Default: `checkArtifact`) */
  checkArtifact?: typeof checkArtifact;
  /**
   * The repositories runs and verifications work in: a graph's path, or this worker's mirror of its
   * remote. (Default: mirrors in `<baton home>/work/mirrors`)
   */
  repositories?: RepositoryMirrors;
  /**
   * Temporal for a run's endpoint, through the worker's own client: subtasks the run's agent
   * proposes and its graph accepts are started at once (U11). (Default: none; such proposals are
   * refused with `no_temporal`)
   */
  workflowControl?: (client: Client, taskQueue: string) => WorkflowControl;
}

/** How many workflows batonWakeTasks wakes between heartbeats. */
const WAKES_PER_HEARTBEAT = 256;

/** How often a verification tells Temporal it is alive, whatever the verifier does. */
const VERIFY_KEEPALIVE_MS = 5_000;

/**
 * Attempts of one verification: at the last, a failure to verify (a checkout that cannot be made,
 * a verifier that throws) is recorded as a rejection instead of being retried forever (T12).
 */
export const VERIFY_ATTEMPTS_MAX = 5;
/** The command a verification records for baton's own artifact check: its refusal, or the pass of an approval alone (U11). */
export const ARTIFACT_CHECK_COMMAND = 'baton: artifact check';
/** The command a verification records when it could not be carried out in VERIFY_ATTEMPTS_MAX attempts. */
export const VERIFY_ATTEMPTS_COMMAND = 'baton: verification attempts';

/** The check of an approval alone (U11): nothing ran but the artifact check, which passed; a person decides next. */
const checkedForApproval = (revision: string): VerificationResult => ({
  revision,
  command: ARTIFACT_CHECK_COMMAND,
  exitCode: 0,
  outputDigest: `sha256:${createHash('sha256').update('').digest('hex')}`,
  outputTail: '',
});

/** A rejection of `revision` decided by baton itself (`command`), for `reason`, recorded like any failed verification (T12). */
function refusedArtifact(revision: string, command: string, reason: string): VerificationResult {
  return {
    revision,
    command,
    exitCode: 1,
    outputDigest: `sha256:${createHash('sha256').update(reason).digest('hex')}`,
    outputTail: reason,
  };
}

/** Identity the verifier records; distinct from the agent's by construction (T7). */
function verifierIdentity(identity: string): string {
  return `${identity}/verifier`;
}

/** What a run reports to Temporal in its heartbeats; a retry of the run reads the last one. */
interface RunHeartbeat {
  claimVersion: number;
  progress?: Record<string, unknown>;
}

/** What a verification decided, and the dependents whose workflows should look at them again (T8). */
export interface VerifyOutcome {
  /**
   * `stale`: it passed on a pin its upstream task has since superseded. `awaiting_approval`: it
   * passed, and a person decides next (U11). `failed`: an approval wait ran out under the policy `fail`.
   */
  status: 'verified' | 'rejected' | 'stale' | 'awaiting_approval' | 'failed';
  revision: string;
  /** Dependents made ready by this verification. */
  released: string[];
  /** Stale dependents whose dependencies are now all verified: re-run by the `rerun` policy. */
  staled: string[];
}

/** The task as the workflow needs it to decide what comes next. */
export interface TaskView {
  status: TaskStatus;
  attempts: number;
  claimVersion: number;
  leaseExpired: boolean;
  /** U11: while awaiting approval, ms until the wait runs out on the database clock (0 or less: now). (Default: no limit) */
  approvalDueInMs?: number;
}

/** Activities of the task lifecycle. Inputs and outputs are ids and versions only (S3). */
export function createTaskActivities(deps: TaskActivityDeps) {
  const { db, identity } = deps;
  const repositories = deps.repositories ?? repositoryMirrors(path.join(batonHome(), 'work', 'mirrors'));

  /** T6: stops the agent of a silent claim where possible and releases exactly that claim. */
  async function recoverClaim(task: TaskRow, claimVersion: number, reason: string): Promise<boolean> {
    if (task.status !== 'running' || task.claimVersion !== claimVersion) return false;
    const isolation = await isolateOwner(task.id, claimVersion, task.progress);
    const released = await claimRelease(db, {
      taskId: task.id,
      claimVersion,
      actor: identity,
      kind: 'reclaimed_after_silence',
      reason,
      details: { isolation, agentPid: task.progress?.pid ?? null, agentHost: task.progress?.host ?? null },
    });
    if (released)
      Context.current().log.warn('reclaimed after silence', {
        graphId: task.graphId,
        taskKey: task.key,
        taskId: task.id,
        claimVersion,
        worker: identity,
        previousOwner: task.owner,
        reason,
      });
    return released;
  }

  /**
   * A retry of the run: Temporal has ended the earlier attempts (heartbeat timeout: the worker died
   * or froze; or a failure that did not give the claim back). Recovers the claim named in the last
   * heartbeat Temporal recorded, and only that one: this attempt may itself be late (handed to a
   * frozen worker that runs it after thawing), and a later attempt's live claim is never in the
   * details it was given. Without details (an attempt died between its claim and its first
   * heartbeat), it recovers the claim the task holds only once that claim's lease has run out on the
   * database clock, the rule the workflow applies too: a live claim's heartbeats keep its lease.
   * Returns the task's attempts so far.
   */
  async function recoverEarlierAttempt(taskId: string, heartbeatTimeoutMs: number): Promise<number> {
    const { attempt, heartbeatDetails } = Context.current().info;
    const task = await taskRead(db, taskId);
    const claimVersion = (heartbeatDetails as RunHeartbeat | undefined)?.claimVersion;
    if (claimVersion !== undefined) {
      await recoverClaim(
        task,
        claimVersion,
        `owner silent: Temporal heartbeat timeout (${heartbeatTimeoutMs} ms) or failure of an earlier run attempt left claim version ${claimVersion} held; run attempt ${attempt} takes over`,
      );
    } else if (task.leaseExpired) {
      await recoverClaim(
        task,
        task.claimVersion,
        `lease expired on the database clock: no heartbeat for claim version ${task.claimVersion}, which no earlier run attempt reported to Temporal; run attempt ${attempt} takes over`,
      );
    }
    return task.attempts;
  }

  return withActivityFailures({
    /**
     * T3-T6: claims the task for this worker and runs its agent, heartbeating to Temporal and
     * (fenced) to Postgres, then submits the artifact (fenced). Claim and run are one activity, so
     * a silent owner is replaced by Temporal's own retry (heartbeat timeout + retry interval), with
     * no workflow task in between. Null when the task is not claimable now or has no attempts left.
     */
    async batonRunTask(input: { taskId: string; heartbeatTimeoutMs: number; maxAttempts: number }): Promise<TaskView | null> {
      const ctx = Context.current();
      if (ctx.info.attempt > 1) {
        // Temporal hears from a retry before it recovers the earlier attempt's claim: stopping that
        // agent can take longer than the heartbeat timeout on a busy host, and an attempt silent that
        // long is timed out, or failed by the workers' watch, while it works. It carries the earlier
        // attempt's details, so a retry that dies here leaves the next the same claim to recover.
        // (Not on a first attempt: its first heartbeat is the claim version, sent the moment it
        // claims, and an earlier one would hold that back by the SDK's throttle.)
        ctx.heartbeat(ctx.info.heartbeatDetails);
        if ((await recoverEarlierAttempt(input.taskId, input.heartbeatTimeoutMs)) >= input.maxAttempts) return null;
      }
      const claimed = await taskClaim(db, input.taskId, identity, input.heartbeatTimeoutMs, input.maxAttempts);
      if (!claimed) return null;
      const { source: graph, ...claim } = claimed;
      const fence = { taskId: input.taskId, owner: identity, claimVersion: claim.claimVersion };
      // SPEC U6: the fields every record of this run carries (docs/observability.md).
      const fields = {
        graphId: claim.graphId,
        taskKey: claim.key,
        taskId: claim.taskId,
        claimVersion: claim.claimVersion,
        worker: identity,
        agent: claim.spec.run.agent ?? claim.spec.run.pool ?? claim.spec.run.function ?? 'command',
      };
      ctx.log.info('claimed', { ...fields, attempt: claim.attempts });
      // Temporal hears from the run from its first moment (worktree setup can take a while), with
      // the claim version a retry must recover; the runner's own heartbeats add progress and
      // extend the lease in Postgres.
      const beat = (progress?: Record<string, unknown>) =>
        ctx.heartbeat({ claimVersion: claim.claimVersion, progress } satisfies RunHeartbeat);
      beat();
      const runner = deps.runnerFor(claim.spec);
      // Temporal hears that the run is alive only when Postgres has just answered too: a worker cut
      // off from Postgres (but not from Temporal) goes silent, and the heartbeat timeout hands its
      // task to a worker that can reach the store, instead of holding it until its calls fail.
      let finished = false;
      let keepAliveInFlight = false;
      const keepAlive = runner.relaysHeartbeats
        ? undefined
        : setInterval(
            () => {
              if (keepAliveInFlight) return;
              keepAliveInFlight = true;
              // A ping, not a write: the lease and the claim are the runner's heartbeats' business.
              db.query('SELECT 1')
                .then(() => {
                  if (!finished) beat();
                })
                .catch((error: unknown) =>
                  ctx.log.warn('run not kept alive: Postgres does not answer', { taskId: input.taskId, error: String(error) }),
                )
                .finally(() => (keepAliveInFlight = false));
            },
            Math.max(200, Math.floor(input.heartbeatTimeoutMs / 3)),
          );
      try {
        // A remote's base and the pinned upstream revisions are fetched into this worker's mirror first.
        const repository = graph.repo === undefined ? undefined : await repositories.open(graph.repo);
        const base = repository?.remote ? await repository.resolve(graph.base) : graph.base;
        await repository?.fetch(Object.values(claim.upstreamRevisions));
        const heartbeat = async (progress: Record<string, unknown>) => {
          try {
            await taskHeartbeat(db, fence, input.heartbeatTimeoutMs, progress);
            beat(progress);
          } catch (error) {
            // A lost claim stops the agent. A database blip does not, and Temporal is not told the
            // run is alive: if Postgres stays out of reach past the heartbeat timeout, the task is
            // recovered by a worker that can reach it, and this one's submit is fenced whenever it comes.
            if (error instanceof StaleClaimError) throw error;
            ctx.log.warn('heartbeat not recorded in Postgres', { taskId: input.taskId, error: String(error) });
          }
        };
        const artifact = await runner.run({
          claim,
          ...(repository ? { repo: repository.dir } : {}),
          ...(repository?.remote ? { fetch: (revision: string) => repository.fetch([revision]) } : {}),
          base,
          signal: ctx.cancellationSignal,
          log: () => {},
          heartbeatTimeoutMs: input.heartbeatTimeoutMs,
          openAgentApi: async (run) => {
            const token = newTokenSecret();
            await runTokenIssue(db, fence, runAgentIdentity(claim), secretSha256(token));
            const localRun = { taskId: claim.taskId, claimVersion: claim.claimVersion, ...run };
            const { workflowControl } = deps;
            const workflows = workflowControl && (async () => workflowControl(ctx.client, ctx.info.taskQueue));
            return { api: createAgentApi({ db, localRun, ...(workflows && { workflows }) }), token };
          },
          heartbeat,
        });
        // U11: the commit may change a path an object reserves only when the run's agent holds that object.
        if (repository && artifact.revision) {
          const refusal = await reservedPathRefusal(db, repository.dir, {
            taskId: claim.taskId,
            claimVersion: claim.claimVersion,
            revision: artifact.revision,
            baseCommit: artifact.baseCommit ?? base,
            pins: claim.upstreamRevisions,
          });
          if (refusal) throw new AgentFailedError(input.taskId, refusal);
        }
        // On a remote, the commit is published for the verifier and the dependents, on the claim's
        // own branch, and only while the claim holds: a fenced heartbeat first (a stale owner's
        // push is refused here; were it to land between the two, its branch names its own claim
        // version, and its submit is fenced). Verifiers and dependents fetch the commit by name, so
        // the branch only keeps it on the remote.
        if (repository?.remote && artifact.revision) {
          await heartbeat({ publishing: artifact.revision });
          await repository.publish(runBranch(claim), artifact.revision);
        }
        await taskSubmit(db, fence, artifact);
        ctx.log.info('submitted', { ...fields, revision: artifact.revision });
        return { status: 'submitted', attempts: claim.attempts, claimVersion: claim.claimVersion, leaseExpired: false };
      } catch (error) {
        if (error instanceof StaleClaimError) {
          ctx.log.warn('write refused: the claim is no longer this worker’s', { ...fields, error: error.message });
          throw error;
        }
        // An artifact the store refuses (no revision, too large) is the agent's failure, not the run's.
        const agentError =
          error instanceof InvalidInputError ? new AgentFailedError(input.taskId, `invalid artifact: ${error.message}`) : error;
        if (agentError instanceof AgentFailedError) {
          ctx.log.warn('agent failed', { ...fields, error: agentError.detail });
          await taskFailAttempt(db, fence, agentError.detail, claim.attempts < input.maxAttempts);
          throw agentError;
        }
        // The database or the worktree failed under the run, or the run was cancelled (its
        // workflow was, or Temporal gave up on this attempt), or this worker is shutting down and
        // the run outlived its grace: give this claim back, then let Temporal retry (at once after
        // a hand-back); the attempt count decides whether the task runs again, and a hand-back
        // returns its attempt. Keyed on the claim version, so a claim another attempt already
        // recovered is left alone.
        const handingBack = shuttingDown(ctx.cancellationSignal);
        const reason = handingBack
          ? `worker ${identity} is shutting down and the run had not finished: handed back for another worker to take at once`
          : `run ${ctx.cancellationSignal.aborted ? 'cancelled' : 'failed'} before submitting: ${error instanceof Error ? error.message : String(error)}`;
        ctx.log.warn(handingBack ? 'handed back' : 'claim released', { ...fields, reason });
        await claimRelease(db, {
          taskId: input.taskId,
          claimVersion: claim.claimVersion,
          actor: identity,
          kind: handingBack ? 'handed_back' : 'claim_released',
          reason,
        }).catch((e: unknown) =>
          ctx.log.warn('claim not released; the next attempt recovers it', { taskId: input.taskId, error: String(e) }),
        );
        throw handingBack ? handedBack(reason) : error;
      } finally {
        finished = true;
        clearInterval(keepAlive);
      }
    },

    /** T6: a claim nobody runs (its lease expired on the database clock) is recovered. False when it had moved on. */
    async batonRecoverTask(input: { taskId: string; claimVersion: number; reason: string }): Promise<boolean> {
      return recoverClaim(await taskRead(db, input.taskId), input.claimVersion, input.reason);
    },

    /** T7: verifies the exact submitted artifact as someone other than its agent, and releases dependents. */
    async batonVerifyTask(input: { taskId: string }): Promise<VerifyOutcome> {
      const verifier = verifierIdentity(identity);
      // A retry after the outcome was recorded (its completion lost on the way to Temporal) finds
      // the task decided and returns that outcome instead of verifying twice, with the dependents as
      // they are now.
      const current = await verificationStart(db, input.taskId, verifier);
      const { claimVersion, artifact, spec, source: graph } = current;
      if (current.status === 'awaiting_approval' || current.status === 'rejected' || current.status === 'stale')
        return { status: current.status, revision: artifact.revision, released: [], staled: [] };
      if (current.status === 'verified') {
        const tasks = await graphReadTasks(db, current.graphId);
        const verified = new Set(tasks.filter((t) => t.status === 'verified').map((t) => t.key));
        const dependents = tasks.filter((t) => t.dependsOn.includes(current.key) && t.dependsOn.every((d) => verified.has(d)));
        return {
          status: 'verified',
          revision: artifact.revision,
          released: dependents.filter((t) => t.status === 'ready').map((t) => t.id),
          staled: dependents.filter((t) => t.status === 'stale').map((t) => t.id),
        };
      }
      const approvalAlone = spec.verify.command === undefined && spec.verify.function === undefined;
      const ctx = Context.current();
      const keepAlive = setInterval(() => ctx.heartbeat(), VERIFY_KEEPALIVE_MS);
      // T12: nothing of an artifact the agent gamed is run: it is rejected with the reason.
      const check = async (): Promise<VerificationResult> => {
        // On a remote: the exact commits the check needs, fetched into this worker's mirror.
        const repository = graph.repo === undefined ? undefined : await repositories.open(graph.repo);
        const pins = Object.values(current.upstreamRevisions);
        await repository?.fetch([artifact.revision, ...(artifact.baseCommit ? [artifact.baseCommit] : []), ...pins]);
        const refusal = repository
          ? await (deps.checkArtifact ?? checkArtifact)({
              repo: repository.dir,
              revision: artifact.revision,
              baseCommit: artifact.baseCommit ?? (await repository.resolve(graph.base)),
              pins: current.upstreamRevisions,
              protect: spec.verify.protect ?? [],
              command: spec.verify.command,
            })
          : undefined;
        if (refusal) return refusedArtifact(artifact.revision, ARTIFACT_CHECK_COMMAND, refusal);
        // U11: an approval alone: the artifact check was all there was to run; a person decides next.
        if (approvalAlone) return checkedForApproval(artifact.revision);
        return deps.verifierFor(spec).verify({
          taskId: input.taskId,
          ...(repository ? { repo: repository.dir } : {}),
          artifact,
          verify: spec.verify,
          heartbeat: () => ctx.heartbeat(),
          signal: ctx.cancellationSignal,
        });
      };
      let result: VerificationResult;
      try {
        // T12: a verification that keeps failing (say, a commit no checkout can hold) is a rejection
        // at its last attempt, not a retry forever; attempts that ended without a word (the command
        // hung past its timeout, the worker died under it) count too. A cancelled one is cancelled.
        result =
          ctx.info.attempt > VERIFY_ATTEMPTS_MAX
            ? refusedArtifact(
                artifact.revision,
                VERIFY_ATTEMPTS_COMMAND,
                `${VERIFY_ATTEMPTS_MAX} attempts to verify it ended without a result (timed out, or the worker was lost)`,
              )
            : await check();
      } catch (error) {
        // Cut off by this worker's shutdown: another worker verifies it at once (and says so, `verification_restarted`).
        if (shuttingDown(ctx.cancellationSignal))
          throw handedBack(`worker ${identity} shut down before the verification of ${input.taskId} finished`);
        if (ctx.cancellationSignal.aborted || ctx.info.attempt < VERIFY_ATTEMPTS_MAX) throw error;
        result = refusedArtifact(
          artifact.revision,
          VERIFY_ATTEMPTS_COMMAND,
          `the verification failed ${ctx.info.attempt} times: ${error instanceof Error ? error.message : String(error)}`,
        );
      } finally {
        clearInterval(keepAlive);
      }
      // U11: a pass of a task whose verify names an approval goes to a person; the rest is recorded as it is.
      const outcome =
        result.exitCode === 0 && spec.verify.approval
          ? await approvalRequest(db, {
              taskId: input.taskId,
              verifier,
              claimVersion,
              ...result,
              // Only a command or function's pass is a verification of its own.
              command: approvalAlone ? undefined : result.command,
            })
          : await verificationRecord(db, { taskId: input.taskId, verifier, claimVersion, ...result });
      ctx.log.info(outcome.status === 'verified' ? 'verification passed' : `verification: ${outcome.status}`, {
        graphId: current.graphId,
        taskKey: current.key,
        taskId: input.taskId,
        claimVersion,
        worker: identity,
        verifier,
        revision: artifact.revision,
        command: result.command,
      });
      return { status: outcome.status, revision: artifact.revision, released: outcome.released, staled: outcome.staled };
    },

    /**
     * U11: the approval wait of a task ran out: decided as the approval's policy says (a rejection,
     * or a failure), by this worker's verifier. Null when it was not due on the database clock yet,
     * or a person decided first: the workflow reads the task again.
     */
    async batonApprovalTimedOut(input: { taskId: string }): Promise<VerifyOutcome | null> {
      const task = await taskRead(db, input.taskId);
      try {
        const outcome = await approvalDecide(db, { taskId: input.taskId, actor: verifierIdentity(identity), decision: 'timed_out' });
        return { ...outcome, revision: task.artifact?.revision ?? '' };
      } catch (error) {
        if (error instanceof IllegalTransitionError) return null;
        throw error;
      }
    },

    /** Applies the graph's policy after a rejected verification: run again, or fail the task. */
    async batonAfterRejection(input: { taskId: string; policy: GraphPolicy }): Promise<TaskStatus> {
      const task = await taskRead(db, input.taskId);
      if (task.status !== 'rejected') return task.status; // already decided by an earlier try
      const rerun = input.policy.onVerificationFailure === 'rerun' && task.attempts < input.policy.maxAttempts;
      await taskSetStatus(db, {
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

    /**
     * T8: applies the graph's `onUpstreamChange` policy to a stale task (the store reads it): made
     * ready on its upstream tasks' current verified revisions, or left stale (policy `mark`, or an
     * upstream task not verified yet). Returns its status afterwards. (The name is 0.1's, which
     * recorded workflow histories call.)
     */
    async batonRerunTask(input: { taskId: string; reason: string }): Promise<TaskStatus> {
      return taskRerunStale(db, { taskId: input.taskId, actor: identity, reason: input.reason });
    },

    /** Marks the task cancelled (its workflow was cancelled); a finished task stays as it is. */
    async batonCancelTask(input: { taskId: string; reason: string }): Promise<void> {
      const task = await taskRead(db, input.taskId);
      if (TERMINAL_STATUSES.has(task.status)) return;
      await taskSetStatus(db, { taskId: input.taskId, actor: identity, to: 'cancelled', kind: 'cancelled', reason: input.reason });
    },

    /** Gives up on a task whose attempts are used up (ready -> failed), recording why. */
    async batonFailExhaustedTask(input: { taskId: string; reason: string }): Promise<void> {
      await taskSetStatus(db, { taskId: input.taskId, actor: identity, to: 'failed', kind: 'failed', reason: input.reason });
    },

    /**
     * T8: after a verification, makes the workflows of the dependents it released (their tasks just
     * made ready) and of those it left stale look at their tasks now, each started when none runs.
     * Through this worker's Temporal client rather than as children of the verifying workflow, so one
     * verification may release any number (Temporal allows a workflow 2,000 pending children).
     */
    async batonWakeTasks(input: { released: string[]; staled: string[]; policy: GraphPolicy }): Promise<void> {
      const ctx = Context.current();
      const workflows = workflowControl(ctx.client, ctx.info.taskQueue);
      for (const [taskIds, ready] of [
        [input.released, true],
        [input.staled, false],
      ] as const) {
        for (let i = 0; i < taskIds.length; i += WAKES_PER_HEARTBEAT) {
          await workflows.wakeTasks(taskIds.slice(i, i + WAKES_PER_HEARTBEAT), input.policy, { ready });
          ctx.heartbeat();
        }
      }
    },

    /** The task's status and attempts, for the workflow's decisions. */
    async batonReadTask(input: { taskId: string }): Promise<TaskView> {
      const task = await taskRead(db, input.taskId);
      const view: TaskView = {
        status: task.status,
        attempts: task.attempts,
        claimVersion: task.claimVersion,
        leaseExpired: task.leaseExpired,
      };
      const dueInMs = task.status === 'awaiting_approval' ? await approvalDueInMs(db, input.taskId) : undefined;
      return dueInMs === undefined ? view : { ...view, approvalDueInMs: dueInMs };
    },
  });
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;
