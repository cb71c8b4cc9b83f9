// Importing baton leaves pg's process-wide type parsers alone (issue 21): int8 is read as a number
// on the connections baton opens itself.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { BATON_PG_TYPES, createPool } from '../../src/index.js';
import { useTestDatabase } from '../helpers/db.js';

const db = useTestDatabase();
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

function hostPool(types?: pg.CustomTypesConfig): pg.Pool {
  const pool = new pg.Pool({ connectionString: db.url, max: 1, ...(types ? { types } : {}) });
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
});
