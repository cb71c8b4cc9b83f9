import { createHash } from 'node:crypto';
import type { Queryable } from '../db/queryable.js';
import { poolOffer, poolRunState } from '../db/sql/poolRuns.js';
import { taskRead } from '../db/sql/reads.js';
import { StaleClaimError } from '../errors.js';
import { HEARTBEAT_TIMEOUT_MS_DEFAULT } from '../tasks/graphSpec.js';
import type { Artifact } from '../tasks/types.js';
import { ensureGitConfig, git, resolveCommit } from './git.js';
import { RefusedObjectsError } from './repository.js';
import { AgentFailedError, type RunContext, type Runner } from './types.js';

/** How often the pool runner looks at its pooled run. (Default: 1 s) */
const POOL_POLL_INTERVAL_MS_DEFAULT = 1_000;

interface PoolRunnerOptions {
  db: Queryable;
  /** The worker's identity: the owner of the claim it offers (T5). */
  identity: string;
  /** (Default: 1 s) */
  pollIntervalMs?: number;
}

/**
 * U7: runs a task whose spec says `run: { pool }` by offering its claim to the remote agents of that
 * pool. One of them takes it with `pool.claim` through the agent API, gets a run token bound to the
 * claim, heartbeats and submits its pushed commit. This runner relays each of the agent's beats to
 * Temporal (and the lease) and nothing else: when the agent goes silent, the run goes silent, the
 * heartbeat timeout ends the attempt, and the usual recovery reclaims the task, which moves the
 * claim and so voids the agent's token. The submitted revision must be in the graph's repository,
 * into which the runner has every push checked (`receive.fsckObjects`);
 * the verifier then checks it as it checks any artifact (artifactCheck.ts): it must contain the base
 * and the pinned upstream revisions and add something.
 */
export function createPoolRunner(options: PoolRunnerOptions): Runner {
  const { db, identity } = options;
  const pollIntervalMs = options.pollIntervalMs ?? POOL_POLL_INTERVAL_MS_DEFAULT;
  return {
    relaysHeartbeats: true,
    async run(ctx: RunContext): Promise<Artifact> {
      const { claim } = ctx;
      const pool = claim.spec.run.pool;
      if (!pool) throw new AgentFailedError(claim.taskId, 'the pool runner needs run.pool');
      const fence = { taskId: claim.taskId, owner: identity, claimVersion: claim.claimVersion };
      const timeoutMs = ctx.heartbeatTimeoutMs ?? HEARTBEAT_TIMEOUT_MS_DEFAULT;
      // The base the agent starts from, as it is when the run is offered: its artifact must contain it (T12).
      const baseCommit = ctx.repo ? await resolveCommit(ctx.repo, ctx.base) : undefined;
      // A remote agent pushes its commit into the repository itself: every object it sends is
      // checked as strictly as any push should be (S6: `.git`, `..` and the rest of fsck's rules).
      // It pushes to the graph's remote when it has one, and the mirror checks what it fetches of it.
      if (ctx.repo && !ctx.fetch) await ensureGitConfig(ctx.repo, 'receive.fsckObjects', 'true');
      await poolOffer(db, fence, pool);
      let relayed: string | null = null;
      for (;;) {
        if (ctx.signal.aborted)
          throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error(`run cancelled: ${String(ctx.signal.reason)}`);
        const state = await poolRunState(db, fence);
        if (state.revision) return artifactOf(ctx, state.agent!, state.revision, baseCommit);
        if (state.agent === null) {
          // Nobody has taken it yet: the worker itself is what is alive.
          await ctx.heartbeat({ pool, waiting: true });
        } else if (state.beatAt !== relayed) {
          relayed = state.beatAt;
          await ctx.heartbeat({ pool, agent: state.agent, ...(state.progress ? { progress: state.progress } : {}) });
        } else if ((state.silentMs ?? 0) > timeoutMs) {
          // Silent past the timeout: Temporal's heartbeat timeout ends this attempt and the next one
          // recovers the claim. This attempt waits for that, then stops without a word.
          const task = await taskRead(db, claim.taskId);
          if (task.status !== 'running' || task.claimVersion !== claim.claimVersion) {
            throw new StaleClaimError(claim.taskId, identity, claim.claimVersion, 'pooled run', task);
          }
        }
        await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
      }
    },
  };
}

async function artifactOf(ctx: RunContext, agent: string, revision: string, baseCommit: string | undefined): Promise<Artifact> {
  const { claim } = ctx;
  if (ctx.repo) {
    await ctx.fetch?.(revision).catch((error: Error) => {
      // A commit with a `.git` folder and the like is the agent's doing, as a refused push would be on a path.
      if (error instanceof RefusedObjectsError) throw new AgentFailedError(claim.taskId, `${agent} submitted ${error.message}`);
      throw error;
    });
    await git(ctx.repo, ['cat-file', '-e', `${revision}^{commit}`]).catch(() => {
      throw new AgentFailedError(claim.taskId, `${agent} submitted ${revision}, which is not in the repository: push it first`);
    });
  }
  return {
    revision,
    testCommand: claim.spec.verify.command ?? claim.spec.verify.function ?? '',
    agentResult: { exitCode: 0, outputDigest: createHash('sha256').update(`pool:${agent}:${revision}`).digest('hex') },
    ...(baseCommit ? { baseCommit } : {}),
  };
}
