import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runToolReconciliationDrill } from '../../src/drills/d5ToolReconciliation.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { blindRetryGateway } from './brokenGateway.js';

let db: TestDatabase;
let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  temporal = new Client({ connection, namespace: inject('temporalNamespace') });
});

afterAll(async () => {
  await connection?.close();
  await db?.drop();
});

const workerEnv = () => ({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });

describe('D5: repeat an external call after an uncertain outcome', () => {
  // 500 calls in this process, each meeting one fault (reset, timeout, 5xx before or after the
  // tool committed, owner lost mid-call and the task reclaimed), then three real worker processes
  // SIGKILLed while the tool holds the answer to their call.
  it('reconciles every ambiguous call to a known outcome with zero duplicate effects', async () => {
    const result = await runToolReconciliationDrill({ pool: db.pool, ambiguousCalls: 500, kills: 3, temporal, workerEnv: workerEnv() });
    console.log(`D5 figures: ${JSON.stringify(result.figures)}`);
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ ambiguous: 503, reconciled: 503, duplicateEffects: 0, workerKills: 3 });
    const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM baton.tool_calls WHERE status NOT IN ('succeeded', 'reconciled_succeeded')");
    expect(rows[0].n).toBe(0);
  });

  it('fails with reconciliation turned off: the blind retry duplicates effects', async () => {
    const result = await runToolReconciliationDrill({ pool: db.pool, ambiguousCalls: 120, gateway: blindRetryGateway });
    expect(result.passed).toBe(false);
    expect(result.figures.duplicateEffects).toBeGreaterThan(0);
    expect(result.violations.join('\n')).toMatch(/the tool shows 2 effect\(s\)/);
  });
});
