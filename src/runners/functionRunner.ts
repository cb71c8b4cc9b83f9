import type { Artifact } from '../tasks/types.js';
import type { RunContext, Runner, VerificationResult, Verifier, VerifyContext } from './types.js';

export type AgentFunction = (ctx: RunContext) => Promise<Artifact>;
export type VerifierFunction = (ctx: VerifyContext) => Promise<Omit<VerificationResult, 'revision' | 'command'>>;

/** T10: runs a registered function as the agent: for embedding baton and for tests. */
export function createFunctionRunner(functions: Record<string, AgentFunction>): Runner {
  return {
    run(ctx) {
      const name = ctx.claim.spec.run.function;
      const fn = name ? functions[name] : undefined;
      if (!fn) throw new Error(`task ${ctx.claim.taskId}: no agent function registered as '${name}'`);
      return fn(ctx);
    },
  };
}

/** Verifies with a registered function; the function sees only the artifact, never the agent. */
export function createFunctionVerifier(functions: Record<string, VerifierFunction>): Verifier {
  return {
    async verify(ctx) {
      const name = ctx.verify.function;
      const fn = name ? functions[name] : undefined;
      if (!fn) throw new Error(`task ${ctx.taskId}: no verifier function registered as '${name}'`);
      return { revision: ctx.artifact.revision, command: `function:${name}`, ...(await fn(ctx)) };
    },
  };
}
