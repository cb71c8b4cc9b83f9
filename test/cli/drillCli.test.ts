import { readdir } from 'node:fs/promises';
import { describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import { usePostgresHomes } from '../helpers/postgresHomes.js';

/** BATON_HOME of the drill, where R1's Postgres lives. */
const newHome = usePostgresHomes('baton-drill-home');

describe('baton drill against a live deployment', () => {
  it('runs D1-D5, R1 and R2, prints one result per drill as JSON and exits 0 when all pass', async () => {
    const db = await createTestDatabase({ migrate: false });
    const home = await newHome();
    try {
      const env = cleanEnv({
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        BATON_HOME: home,
        TEMPORAL_CLI_PATH: inject('temporalCliPath'),
      });
      const result = await runCli(
        [
          'drill',
          '--json',
          '--claim-trials',
          '50',
          '--kill-trials',
          '1',
          '--freeze-trials',
          '1',
          '--reject-trials',
          '1',
          '--tool-calls',
          '50',
          '--tool-kill-trials',
          '1',
          '--restart-trials',
          '1',
        ],
        env,
      );
      expect(result.code, result.output).toBe(0);
      const drills = JSON.parse(result.stdout) as Array<{ drill: string; passed: boolean; figures: Record<string, unknown> }>;
      expect(drills.map((d) => [d.drill, d.passed])).toEqual([
        ['D1', true],
        ['D2', true],
        ['D3', true],
        ['D4', true],
        ['D5', true],
        ['R1', true],
        ['R2', true],
      ]);
      expect(drills[0]!.figures).toMatchObject({ trials: 50, winners: 50 });
      expect(drills[1]!.figures).toMatchObject({ trials: 1, recovered: 1, lost: 0 });
      expect(drills[2]!.figures).toMatchObject({ trials: 1, recovered: 1, lateWritesLanded: 0, frozenTrialsRefused: 1 });
      expect(drills[3]!.figures).toMatchObject({ trials: 1, rejected: 1, blockedDependents: 2 });
      expect(drills[4]!.figures).toMatchObject({ duplicateEffects: 0 });
      for (const restart of drills.slice(5))
        expect(restart.figures).toMatchObject({ trials: 1, tasks: 5, verified: 5, lost: 0, duplicated: 0 });
      // The servers R1 and R2 started (a Postgres, a Temporal dev server) are gone with their state.
      expect(await readdir(home)).not.toContainEqual(expect.stringMatching(/^drill-restarts-/));
    } finally {
      await db.drop();
    }
  }, 1_200_000); // every drill in turn, each with real worker processes
});
