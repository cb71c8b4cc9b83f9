import { openVerifyCheckout, protectWorkerFiles } from './agentCheckout.js';
import type { AgentIsolation } from './isolation/agentIsolation.js';
import { childEnv, runShell } from './processes.js';
import type { VerificationResult, Verifier, VerifyContext } from './types.js';

/** How often a running verification tells Temporal it is alive. */
const VERIFY_HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * T7: checks out exactly the artifact's commit in a clean checkout and runs the task's
 * verification command there; the agent's own claims about its result play no part. The command
 * runs the repository's code, written by the agent, so it is isolated like an agent (`isolation`).
 */
export function createCommandVerifier(options: { workDir: string; isolation?: AgentIsolation }): Verifier {
  const workDirReady = protectWorkerFiles(options.workDir, options.isolation);
  workDirReady.catch(() => undefined); // reported by the first verification that awaits it
  return {
    async verify(ctx: VerifyContext): Promise<VerificationResult> {
      const command = ctx.verify.command;
      if (!command) throw new Error(`task ${ctx.taskId}: the command verifier needs verify.command`);
      if (!ctx.repo) throw new Error(`task ${ctx.taskId}: the graph names no repo to verify in`);
      await workDirReady;
      const checkout = await openVerifyCheckout({
        isolation: options.isolation,
        workDir: options.workDir,
        repo: ctx.repo,
        taskId: ctx.taskId,
        revision: ctx.artifact.revision,
      });
      const timer = setInterval(() => ctx.heartbeat(), VERIFY_HEARTBEAT_INTERVAL_MS);
      try {
        const outcome = await runShell(command, {
          cwd: checkout.dir,
          signal: ctx.signal,
          confinement: checkout.confinement,
          env: checkout.env(childEnv({ BATON_TASK_ID: ctx.taskId, BATON_VERIFY_REVISION: ctx.artifact.revision })),
        });
        return { revision: ctx.artifact.revision, command, ...outcome };
      } finally {
        clearInterval(timer);
        await checkout.close();
      }
    },
  };
}
