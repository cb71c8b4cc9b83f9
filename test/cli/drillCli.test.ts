import { readdir } from 'node:fs/promises';
import { describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import { usePostgresHomes } from '../helpers/postgresHomes.js';

/** BATON_HOME of the drill, where R1's and R2's servers would live. */
const newHome = usePostgresHomes('baton-drill-home');

// The drills themselves, each against a deliberately broken build too, are tested in test/drills/;
// here, how `baton drill` picks, runs and reports them against a live deployment.
describe('baton drill against a live deployment', () => {
  it('runs the drills it is given, in the drill order, prints one result per drill as JSON and exits 0 when all pass', async () => {
    const db = await createTestDatabase({ migrate: false });
    const home = await newHome();
    try {
      const env = cleanEnv({
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        BATON_HOME: home,
        TEMPORAL_CLI_PATH: inject('temporalCliPath'),
      });
      const result = await runCli(['drill', 'D4', 'D1', '--json', '--claim-trials', '50', '--reject-trials', '1'], env);
      expect(result.code, result.output).toBe(0);
      const drills = JSON.parse(result.stdout) as Array<{ drill: string; passed: boolean; figures: Record<string, unknown> }>;
      expect(drills.map((d) => [d.drill, d.passed])).toEqual([
        ['D1', true],
        ['D4', true],
      ]);
      expect(drills[0]!.figures).toMatchObject({ trials: 50, winners: 50 });
      expect(drills[1]!.figures).toMatchObject({ trials: 1, rejected: 1, blockedDependents: 2 });
      expect(result.output).not.toMatch(/Running (D2|D3|D5|R1|R2)/);
      // Nothing of the drill is left in its home: the folder for R1's and R2's servers is gone.
      expect(await readdir(home)).not.toContainEqual(expect.stringMatching(/^drill-restarts-/));
    } finally {
      await db.drop();
    }
  }, 1_200_000); // real worker processes and a real verifier

  it('refuses a drill it does not know before it starts anything, naming the ones it does', async () => {
    const home = await newHome();
    const result = await runCli(['drill', 'D1', 'nope'], cleanEnv({ BATON_HOME: home }));
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/'nope' is invalid/);
    expect(result.output).toMatch(/D1, D2, D3, D4, D5, R1, R2/);
    expect(result.output).not.toMatch(/Running D1/);
    expect(await readdir(home)).toEqual([]);
  });
});
