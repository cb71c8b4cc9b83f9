import { describe, expect, it } from 'vitest';
import { runToolReconciliationDrill } from '../../src/drills/d5ToolReconciliation.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { blindRetryGateway } from './brokenGateway.js';

const stack = useTaskStack();

describe('D5: repeat an external call after an uncertain outcome', () => {
  // 200 calls in this process, each meeting one fault (reset, timeout, 5xx before or after the
  // tool committed, owner lost mid-call and the task reclaimed), then two real worker processes
  // SIGKILLed while the tool holds the answer to their call.
  it('reconciles every ambiguous call to a known outcome with zero duplicate effects', async () => {
    const result = await runToolReconciliationDrill({
      pool: stack.db.pool,
      ambiguousCalls: 200,
      kills: 2,
      temporal: stack.temporal.client,
      workerEnv: stack.workerEnv,
    });
    console.log(`D5 figures: ${JSON.stringify(result.figures)}`);
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ ambiguous: 202, reconciled: 202, duplicateEffects: 0, workerKills: 2 });
    const { rows } = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM baton.tool_calls WHERE status NOT IN ('succeeded', 'reconciled_succeeded')",
    );
    expect(rows[0].n).toBe(0);
  });

  it('fails with reconciliation turned off: the blind retry duplicates effects', async () => {
    const result = await runToolReconciliationDrill({ pool: stack.db.pool, ambiguousCalls: 120, gateway: blindRetryGateway });
    expect(result.passed).toBe(false);
    expect(result.figures.duplicateEffects).toBeGreaterThan(0);
    expect(result.violations.join('\n')).toMatch(/the tool shows 2 effect\(s\)/);
  });
});
