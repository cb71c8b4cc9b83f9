import type { AgentFunction } from '../../src/runners/functionRunner.js';

/** An agent that works for `ms`, heartbeating every 200 ms, then returns an artifact named after its claim. */
export const slowAgent =
  (ms: number): AgentFunction =>
  async (ctx) => {
    for (let waited = 0; waited < ms; waited += 200) {
      await ctx.heartbeat({ waited });
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      revision: `${ctx.claim.key}-v${ctx.claim.claimVersion}`,
      testCommand: 'check',
      agentResult: { exitCode: 0, outputDigest: 'd' },
    };
  };
