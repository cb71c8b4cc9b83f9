import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { addDetachedWorktree, removeWorktree } from './git.js';
import { childEnv, runShell } from './processes.js';
import type { VerificationResult, Verifier, VerifyContext } from './types.js';

/** How often a running verification tells Temporal it is alive. */
const VERIFY_HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * T7: checks out exactly the artifact's commit in a clean worktree and runs the task's
 * verification command there; the agent's own claims about its result play no part.
 */
export function createCommandVerifier(options: { workDir: string }): Verifier {
  return {
    async verify(ctx: VerifyContext): Promise<VerificationResult> {
      const command = ctx.verify.command;
      if (!command) throw new Error(`task ${ctx.taskId}: the command verifier needs verify.command`);
      if (!ctx.repo) throw new Error(`task ${ctx.taskId}: the graph names no repo to verify in`);
      const dir = path.join(options.workDir, 'verify', `${ctx.taskId.replaceAll('/', '_')}-${randomUUID().slice(0, 8)}`);
      await addDetachedWorktree(ctx.repo, dir, ctx.artifact.revision);
      const timer = setInterval(() => ctx.heartbeat(), VERIFY_HEARTBEAT_INTERVAL_MS);
      try {
        const outcome = await runShell(command, {
          cwd: dir,
          signal: ctx.signal,
          env: childEnv({ BATON_TASK_ID: ctx.taskId, BATON_VERIFY_REVISION: ctx.artifact.revision }),
        });
        return { revision: ctx.artifact.revision, command, ...outcome };
      } finally {
        clearInterval(timer);
        await removeWorktree(ctx.repo, dir);
      }
    },
  };
}
