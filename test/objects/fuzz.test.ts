// Fuzzing the shared-object API (S3, O1-O6) against real Postgres: every call with random and
// adversarial input either succeeds or throws a BatonError, and a call refused for its input
// writes nothing. A refusal by the rules (a stale token, no permission) writes only its event.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError, IllegalTransitionError, InvalidInputError, NotFoundError, ObjectExistsError } from '../../src/errors.js';
import { ObjectRefusedError } from '../../src/objects/errors.js';
import { objectLog } from '../../src/objects/objectLog.js';
import * as store from '../../src/objects/objectStore.js';
import { OBJECT_ACCESS_LEVELS } from '../../src/objects/types.js';
import { useTestDatabase } from '../helpers/db.js';
import { insertObject, uniqueObjectKey } from '../helpers/objects.js';

const db = useTestDatabase();

// A few seconds on 2 cores: each run sets up its own object (six store calls) and makes one call.
const NUM_RUNS = 150;

/** An object A holds (token 1) at version 1, with B a writer, S a suggester (one open suggestion) and V a viewer. */
interface Scenario {
  key: string;
  token: number;
  version: number;
  suggestionId: number;
}

async function scenario(): Promise<Scenario> {
  const key = uniqueObjectKey('fuzz');
  await insertObject(db.pool, 'A', key, { B: 'write', S: 'suggest', V: 'view' });
  const { token } = await store.takeObject(db.pool, 'A', { key });
  await store.writeObject(db.pool, 'A', { key, version: 0, token, content: 'v1' });
  const { suggestionId } = await store.suggestObjectChange(db.pool, 'S', { key, baseVersion: 1, content: 's1' });
  return { key, token, version: 1, suggestionId };
}

/** A field's value: what the scenario makes valid (`valid`), or anything given as it is. */
type Field = { valid: 'key' | 'newKey' | 'token' | 'version' | 'suggestionId' } | { given: unknown };

const resolve = (field: Field, s: Scenario): unknown => {
  if ('given' in field) return field.given;
  if (field.valid === 'newKey') return uniqueObjectKey('fuzz-new');
  return s[field.valid];
};

/** Text of every kind: NUL, other control characters, unpaired surrogates, emoji, huge. */
const anyText = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\0',
      'a\0b',
      '\uD800',
      'x\uDC00',
      '\uD83D\uDE00',
      '../etc/passwd',
      '__proto__',
      'x'.repeat(2_000_001),
    ),
  },
);
/** Values no field expects: wrong types, BigInt, NaN, huge and negative numbers, objects of every kind. */
const adversarial = fc.oneof(
  anyText,
  fc.constantFrom(-1, 1.5, NaN, Infinity, 2 ** 53, Number.MAX_VALUE, '1', 1n, null, true, [], {}),
  fc.anything({
    maxDepth: 2,
    withBigInt: true,
    withDate: true,
    withMap: true,
    withNullPrototype: true,
    withBoxedValues: true,
    stringUnit: 'binary',
  }),
);
const given = (value: fc.Arbitrary<unknown>): fc.Arbitrary<Field> => value.map((v) => ({ given: v }));
const valid = (name: Extract<Field, { valid: string }>['valid']): fc.Arbitrary<Field> => fc.constant({ valid: name });
/** Mostly the expected value, often a wrong one, sometimes none. */
const field = (expected: fc.Arbitrary<Field>) =>
  fc.oneof(
    { weight: 4, arbitrary: expected },
    { weight: 2, arbitrary: given(adversarial) },
    { weight: 1, arbitrary: given(fc.constant(undefined)) },
  );

const actorArb = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('A', 'B', 'S', 'V', 'stranger') }, { weight: 1, arbitrary: adversarial });
const F = {
  key: field(valid('key')),
  newKey: field(valid('newKey')),
  token: field(valid('token')),
  version: field(valid('version')),
  suggestionId: field(valid('suggestionId')),
  text: field(given(anyText)),
  actor: field(given(fc.constantFrom('A', 'B', 'S', 'V'))),
  access: field(given(fc.constantFrom(...OBJECT_ACCESS_LEVELS))),
  ms: field(given(fc.integer({ min: 1, max: 60_000 }))),
};

type Call = (actor: any, input: any) => Promise<unknown>;
const OPS: Record<string, { call: Call; fields: Record<string, fc.Arbitrary<Field>> }> = {
  create: {
    call: (a, i) => store.createObject(db.pool, a, i),
    fields: { key: F.newKey, content: F.text, contentRef: F.text, silenceTimeoutMs: F.ms, defaultAccess: F.access },
  },
  grant: { call: (a, i) => store.grantObjectAccess(db.pool, a, i), fields: { key: F.key, grantee: F.actor, access: F.access } },
  show: { call: (a, i) => store.showObject(db.pool, a, i), fields: { key: F.key } },
  read: { call: (a, i) => store.readObject(db.pool, a, i), fields: { key: F.key } },
  take: { call: (a, i) => store.takeObject(db.pool, a, i), fields: { key: F.key, reason: F.text } },
  write: {
    call: (a, i) => store.writeObject(db.pool, a, i),
    fields: { key: F.key, version: F.version, token: F.token, content: F.text, contentRef: F.text },
  },
  heartbeat: { call: (a, i) => store.heartbeatObject(db.pool, a, i), fields: { key: F.key, token: F.token } },
  release: { call: (a, i) => store.releaseObject(db.pool, a, i), fields: { key: F.key, token: F.token, reason: F.text } },
  offer: {
    call: (a, i) => store.offerObject(db.pool, a, i),
    fields: { key: F.key, token: F.token, version: F.version, successor: F.actor },
  },
  accept: { call: (a, i) => store.acceptObject(db.pool, a, i), fields: { key: F.key, version: F.version } },
  decline: { call: (a, i) => store.declineObject(db.pool, a, i), fields: { key: F.key, reason: F.text } },
  withdraw: { call: (a, i) => store.withdrawOffer(db.pool, a, i), fields: { key: F.key, token: F.token } },
  suggest: {
    call: (a, i) => store.suggestObjectChange(db.pool, a, i),
    fields: { key: F.key, baseVersion: F.version, content: F.text, contentRef: F.text, note: F.text },
  },
  approve: { call: (a, i) => store.approveSuggestion(db.pool, a, i), fields: { key: F.key, token: F.token, suggestionId: F.suggestionId } },
  checkView: { call: (a, i) => store.checkObjectView(db.pool, a, i), fields: { key: F.key } },
  log: { call: (a, i) => objectLog(db.pool, a, i), fields: { key: F.key, afterSeq: F.version, limit: F.ms } },
};

/** One call: an operation, its actor, and its input (a mapping of fields, or any value at all). */
const callArb = fc.constantFrom(...Object.keys(OPS)).chain((op) =>
  fc.record({
    op: fc.constant(op),
    actor: actorArb,
    input: fc.oneof(
      { weight: 9, arbitrary: fc.record(OPS[op]!.fields, { requiredKeys: [] }) },
      { weight: 1, arbitrary: given(adversarial) },
    ),
  }),
);

const OBJECT_TABLES = ['objects', 'object_permissions', 'object_read_views', 'object_offers', 'object_suggestions'];

/** A digest of every object table's rows, and the newest event id. */
async function storeState(): Promise<{ tables: Record<string, string>; lastEventId: number }> {
  const digests = OBJECT_TABLES.map(
    (t) => `(SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM baton.${t} r) AS ${t}`,
  );
  const { rows } = await db.pool.query(
    `SELECT ${digests.join(', ')}, (SELECT coalesce(max(id), 0)::int FROM baton.events) AS last_event_id`,
  );
  const { last_event_id: lastEventId, ...tables } = rows[0];
  return { tables, lastEventId };
}

const eventKindsAfter = async (id: number) =>
  (await db.pool.query<{ kind: string }>('SELECT kind FROM baton.events WHERE id > $1 ORDER BY id', [id])).rows.map((r) => r.kind);

describe('fuzzing the shared-object API (S3)', () => {
  it('answers random and adversarial input with a typed error and writes nothing for a refused call', async () => {
    await fc.assert(
      fc.asyncProperty(callArb, async ({ op, actor, input }) => {
        const s = await scenario();
        const args =
          'given' in input
            ? input.given
            : Object.fromEntries(Object.entries(input as Record<string, Field>).map(([name, f]) => [name, resolve(f, s)]));
        const before = await storeState();
        let error: unknown;
        try {
          await OPS[op]!.call(actor, args);
        } catch (caught) {
          error = caught;
        }
        if (error === undefined) {
          // What was accepted is stored exactly as given (whoever wrote it may read it).
          const content = (args as { content?: unknown }).content;
          if ((op === 'write' || op === 'create') && typeof content === 'string') {
            const key = (args as { key: string }).key;
            expect((await store.readObject(db.pool, actor as string, { key })).content).toBe(content);
          }
          return;
        }
        expect(error, `${op} threw ${String(error)}`).toBeInstanceOf(BatonError);
        const after = await storeState();
        expect(after.tables).toEqual(before.tables);
        const newEvents = await eventKindsAfter(before.lastEventId);
        if (
          error instanceof InvalidInputError ||
          error instanceof IllegalTransitionError ||
          error instanceof NotFoundError ||
          error instanceof ObjectExistsError
        ) {
          expect(newEvents).toEqual([]);
        } else {
          // A refusal by the rules is on record, and nothing else is.
          expect(error).toBeInstanceOf(ObjectRefusedError);
          expect(newEvents).toHaveLength(1);
          expect(newEvents[0]).toMatch(/_refused$/);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('stores written text exactly as given, or refuses it and writes nothing', async () => {
    // Strings Postgres cannot hold as they are (NUL, unpaired surrogates) among ordinary ones.
    const text = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1 }),
      fc.string({ unit: fc.constantFrom('a', '\0', '\uD800', '\uDFFF', '\uD83D\uDE00'), minLength: 1 }),
    );
    await fc.assert(
      fc.asyncProperty(text, fc.boolean(), async (value, asRef) => {
        const s = await scenario();
        const before = await storeState();
        const written = await store
          .writeObject(db.pool, 'A', {
            key: s.key,
            version: s.version,
            token: s.token,
            ...(asRef ? { contentRef: value } : { content: value }),
          })
          .catch((error: unknown) => error);
        if (written instanceof Error) {
          expect(written).toBeInstanceOf(InvalidInputError);
          expect(await storeState()).toEqual(before);
          return;
        }
        const read = await store.readObject(db.pool, 'A', { key: s.key });
        expect(asRef ? read.contentRef : read.content).toBe(value);
      }),
      { numRuns: 100 },
    );
  });

  it('sweeps silent holders only for a valid actor', async () => {
    await fc.assert(
      fc.asyncProperty(adversarial, async (actor) => {
        const before = await storeState();
        const swept = await store.sweepSilentHolders(db.pool, actor as string).catch((error: unknown) => error);
        if (!Array.isArray(swept)) {
          expect(swept).toBeInstanceOf(InvalidInputError);
          expect(await storeState()).toEqual(before);
        }
      }),
      { numRuns: 50 },
    );
  });
});
