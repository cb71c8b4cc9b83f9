import { describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';

describe('the README demo (baton demo)', () => {
  it('recovers a frozen worker, refuses its late writes, retries a failed verification and releases tests last', async () => {
    const db = await createTestDatabase({ migrate: false });
    try {
      const env = cleanEnv({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress') });
      const result = await runCli(['demo'], env);
      expect(result.code, result.output).toBe(0);
      for (const check of [
        'every task verified',
        'request recovered by another worker at claim version 2',
        "the frozen worker's late writes refused and logged (",
        'response rejected once, then verified on the rerun',
        "tests' pull request opened once, reconciled by the next owner after a SIGKILL",
        'tests released only after request and response were verified',
      ]) {
        expect(result.output).toContain(`ok    ${check}`);
      }
      expect(result.output).toMatch(/Ownership timeline of graph sdk-/);
      // The closing hint works as printed (on a deployment; on the embedded stack it also says to start baton dev).
      const hint = /Replay the timeline with: npx baton (events sdk-\S+)$/m.exec(result.output);
      expect(hint, result.output).not.toBeNull();
      const replayed = await runCli(hint![1]!.split(' '), env);
      expect(replayed.code, replayed.output).toBe(0);
      expect(replayed.stdout).toMatch(/reclaimed_after_silence/);
    } finally {
      await db.drop();
    }
  }, 720_000); // three real worker processes, a frozen one among them, on a machine that may be busy (the demo gives up after 600 s)
});
