import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectRefusedError, StaleWriteError } from '../../src/objects/errors.js';
import { readObject, showObject, takeObject, writeObject } from '../../src/objects/objectStore.js';
import type { ObjectState } from '../../src/objects/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { insertObject, logViolations, objectEvents, uniqueObjectKey } from '../helpers/objects.js';

const AGENTS = 8;
const ROUNDS = 5;
const LOOPS_PER_AGENT = 12;

let db: TestDatabase;
/** One connection per agent, as separate processes would have. */
let connections: pg.Client[];
const agents = Array.from({ length: AGENTS }, (_, i) => `agent-${i + 1}`);

beforeAll(async () => {
  db = await createTestDatabase();
  connections = await Promise.all(
    agents.map(async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      return client;
    }),
  );
});

afterAll(async () => {
  await Promise.all((connections ?? []).map((c) => c.end()));
  await db?.drop();
});

async function newObject(prefix: string): Promise<string> {
  const key = uniqueObjectKey(prefix);
  await insertObject(db.pool, 'owner', key, Object.fromEntries(agents.map((a) => [a, 'write'])));
  return key;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

describe('shared objects under concurrency: many agents, separate connections, one object', () => {
  it('lands every racing take, one after another: tokens 1..N with no gaps, each recording from whom', async () => {
    const key = await newObject('race/take');
    const taken = await Promise.all(agents.map((a, i) => takeObject(connections[i]!, a, { key })));

    expect(taken.map((t) => t.token).sort((a, b) => a - b)).toEqual(agents.map((_, i) => i + 1));
    const last = taken.find((t) => t.token === AGENTS)!;
    expect(await showObject(db.pool, 'owner', { key })).toMatchObject({ holder: last.holder, token: AGENTS });
    const events = await objectEvents(db.pool, key);
    expect(events.filter((e) => e.kind === 'taken' || e.kind === 'taken_over')).toHaveLength(AGENTS);
    expect(logViolations(events)).toEqual([]);
  });

  it('after a race to take, lands exactly one of the racing writes: the last taker’s', async () => {
    const key = await newObject('race/write');
    for (let round = 0; round < ROUNDS; round++) {
      const views = await Promise.all(agents.map((a, i) => readObject(connections[i]!, a, { key })));
      const tokens = await Promise.all(agents.map((a, i) => takeObject(connections[i]!, a, { key })));
      const writes = await Promise.allSettled(
        agents.map((a, i) =>
          writeObject(connections[i]!, a, { key, version: views[i]!.version, token: tokens[i]!.token, content: `${a} round ${round}` }),
        ),
      );

      const winner = tokens.reduce((best, t) => (t.token > best.token ? t : best)).holder!;
      const landed = writes.flatMap((w, i) => (w.status === 'fulfilled' ? [agents[i]] : []));
      expect(landed, `round ${round}`).toEqual([winner]);
      for (const w of writes) {
        if (w.status === 'rejected') expect(w.reason).toBeInstanceOf(StaleWriteError);
      }
      expect(await readObject(db.pool, 'owner', { key })).toMatchObject({ version: round + 1, content: `${winner} round ${round}` });
    }
    expect(logViolations(await objectEvents(db.pool, key))).toEqual([]);
  });

  it('records exactly the writes that reported success, in an unbroken chain of versions, while agents take, read and write in a loop', async () => {
    const key = await newObject('race/loop');
    const landed: { actor: string; state: ObjectState; content: string }[] = [];
    let refused = 0;

    await Promise.all(
      agents.map(async (actor, i) => {
        const conn = connections[i]!;
        for (let n = 0; n < LOOPS_PER_AGENT; n++) {
          const content = `${actor} #${n}`;
          try {
            const { token } = await takeObject(conn, actor, { key });
            const { version } = await readObject(conn, actor, { key });
            landed.push({ actor, content, state: await writeObject(conn, actor, { key, version, token, content }) });
          } catch (error) {
            if (!(error instanceof ObjectRefusedError)) throw error;
            refused++;
          }
        }
      }),
    );

    const events = await objectEvents(db.pool, key);
    const written = events.filter((e) => e.kind === 'written');
    expect(written.map((e) => [e.actor, e.version, e.fence, e.details.digest]).sort()).toEqual(
      landed.map((l) => [l.actor, l.state.version, l.state.token, md5(l.content)]).sort(),
    );
    expect(written.map((e) => e.version)).toEqual(written.map((_, i) => i + 1));
    expect(events.filter((e) => e.kind === 'stale_write_refused')).toHaveLength(refused);
    expect(landed.length + refused).toBe(AGENTS * LOOPS_PER_AGENT);
    expect(logViolations(events)).toEqual([]);
  });
});
