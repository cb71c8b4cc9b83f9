// Importing baton leaves pg's process-wide type parsers alone (issue 21): int8 is read as a number
// on the connections baton opens itself, and the store's answers read the same through a host's own
// pool that parses int8 as pg does by default.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { eventRead, healthCheckRecord } from '../../src/db/sql/reads.js';
import { BATON_PG_TYPES, createPool } from '../../src/index.js';
import { useTestDatabase } from '../helpers/db.js';
import { insertTask } from '../helpers/tasks.js';

const db = useTestDatabase();
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

function hostPool(types?: pg.CustomTypesConfig): pg.Pool {
  const pool = new pg.Pool({ connectionString: db.url, max: 1, ...(types ? { types } : {}) });
  // As a host's pool must: an idle connection the server ends (the test database dropped, or an
  // administrator's command) is an event, not the process's uncaught error (a clean-clone run saw one).
  pool.on('error', () => {});
  pools.push(pool);
  return pool;
}

const int8Of = async (pool: pg.Pool) => (await pool.query<{ n: unknown }>('SELECT 1::int8 AS n')).rows[0]!.n;

describe("pg's int8 parsing", () => {
  it('stays pg’s default for the whole process after baton is imported', () => {
    expect(pg.types.getTypeParser(pg.types.builtins.INT8)('9007199254740993')).toBe('9007199254740993');
  });

  it('is a number on a pool from createPool, and on a host’s pool given BATON_PG_TYPES', async () => {
    const pool = createPool(db.url, { max: 1 });
    pools.push(pool);
    expect(await int8Of(pool)).toBe(1);
    expect(await int8Of(hostPool(BATON_PG_TYPES))).toBe(1);
    expect(await int8Of(hostPool())).toBe('1');
  });

  it.each([
    ['pg’s default parsers (int8 as a string)', undefined],
    [
      'int8 parsed as a BigInt',
      { getTypeParser: (oid: number, format?: string) => (oid === 20 ? BigInt : pg.types.getTypeParser(oid, format as 'text')) },
    ],
  ])('leaves the store’s int8 answers numbers through a host’s pool with %s', async (_, types) => {
    const pool = hostPool(types as pg.CustomTypesConfig | undefined);
    expect(typeof (await int8Of(pool))).not.toBe('number');

    const task = await insertTask(pool, { status: 'running' });
    expect(task.claimVersion).toBe(1);
    const events = await eventRead(pool, 'task', task.id);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) expect(typeof event.id).toBe('number');
    expect(events.find((e) => e.kind === 'claimed')?.fence).toBe(1);
    expect(typeof (await healthCheckRecord(pool, `wf-${task.id}`, 'hello')).id).toBe('number');
  });
});
