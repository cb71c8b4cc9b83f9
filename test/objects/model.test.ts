import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '../../src/errors.js';
import { ObjectRefusedError } from '../../src/objects/errors.js';
import * as store from '../../src/objects/objectStore.js';
import { useTestDatabase } from '../helpers/db.js';
import {
  HOLDER,
  initialModel,
  MODEL_ACCESS,
  MODEL_ACTORS,
  OTHER_WRITER,
  step,
  SUCCESSOR,
  THIRD,
  type Expected,
  type ModelOp,
  type ObjectModel,
} from '../helpers/objectModel.js';
import { insertObject, logViolations, objectEvents, silenceHolder, uniqueObjectKey } from '../helpers/objects.js';

// Real time never makes a holder silent here; only the `expire` step does.
const SILENCE_TIMEOUT_MS = 60 * 60_000;
const EXPIRED_BY_MS = 2 * SILENCE_TIMEOUT_MS;
// Enough runs to reach deep handoff states, small enough for a few seconds on 2 cores.
const NUM_RUNS = 60;
const MAX_COMMANDS = 50;
// Reads the state after every step; not one of the model's actors, so its reads change nothing there.
const OBSERVER = 'observer';

const db = useTestDatabase();

interface Real {
  key: string;
  /** Events seen so far. */
  seq: number;
  /** Real ids of the suggestions, in the model's order. */
  suggestionIds: number[];
}

async function callStore(
  r: Real,
  o: ModelOp,
  args: ReturnType<typeof step>['args'],
): Promise<{ outcome: Expected; suggestionId?: number }> {
  const { key } = r;
  try {
    switch (o.op) {
      case 'expire':
        await silenceHolder(db.pool, key, EXPIRED_BY_MS);
        break;
      case 'read':
        await store.readObject(db.pool, args.actor, { key });
        break;
      case 'checkView':
        await store.checkObjectView(db.pool, args.actor, { key });
        break;
      case 'take':
        await store.takeObject(db.pool, args.actor, { key });
        break;
      case 'write':
        await store.writeObject(db.pool, args.actor, { key, version: args.version, token: args.token, content: args.content });
        break;
      case 'heartbeat':
        await store.heartbeatObject(db.pool, args.actor, { key, token: args.token });
        break;
      case 'release':
        await store.releaseObject(db.pool, args.actor, { key, token: args.token });
        break;
      case 'offer':
        await store.offerObject(db.pool, args.actor, { key, token: args.token, version: args.version, successor: args.successor });
        break;
      case 'accept':
        await store.acceptObject(db.pool, args.actor, { key, version: args.version });
        break;
      case 'decline':
        await store.declineObject(db.pool, args.actor, { key });
        break;
      case 'withdraw':
        await store.withdrawOffer(db.pool, args.actor, { key, token: args.token });
        break;
      case 'suggest': {
        const { suggestionId } = await store.suggestObjectChange(db.pool, args.actor, {
          key,
          baseVersion: args.version,
          content: args.content,
        });
        return { outcome: { ok: true }, suggestionId };
      }
      case 'approve':
        await store.approveSuggestion(db.pool, args.actor, { key, token: args.token, suggestionId: r.suggestionIds[args.suggestion]! });
        break;
    }
    return { outcome: { ok: true } };
  } catch (error) {
    if (error instanceof ObjectRefusedError) return { outcome: { refusal: error.refusal } };
    if (error instanceof IllegalTransitionError) return { outcome: { illegal: true } };
    throw error;
  }
}

class OpCommand implements fc.AsyncCommand<ObjectModel, Real> {
  constructor(readonly o: ModelOp) {}

  check(m: Readonly<ObjectModel>): boolean {
    return this.o.op !== 'approve' || m.suggestions.length > 0;
  }

  async run(m: ObjectModel, r: Real): Promise<void> {
    const tokenBefore = m.token;
    const predicted = step(m, this.o);
    const { outcome, suggestionId } = await callStore(r, this.o, predicted.args);
    expect(outcome, `${this} outcome`).toEqual(predicted.expected);
    if (suggestionId !== undefined) r.suggestionIds.push(suggestionId);

    const appended = await objectEvents(db.pool, r.key, r.seq);
    expect(
      appended.map((e) => e.kind),
      `${this} events`,
    ).toEqual(predicted.events);
    r.seq += appended.length;

    const real = await store.readObject(db.pool, OBSERVER, { key: r.key });
    expect(
      {
        version: real.version,
        token: real.token,
        holder: real.holder,
        offer: real.offer && { to: real.offer.to, version: real.offer.version },
      },
      `${this} state`,
    ).toEqual({ version: m.version, token: m.token, holder: m.holder, offer: m.offer && { to: m.offer.to, version: m.offer.version } });
    expect(real.content, `${this} content`).toBe(m.content);
    expect(real.holderSilent, `${this} silence`).toBe(m.silent && m.holder !== null && m.offer === null);
    expect(real.token).toBeGreaterThanOrEqual(tokenBefore);
  }

  toString(): string {
    const { op, ...rest } = this.o;
    return `${op}(${Object.values(rest).join(', ')})`;
  }
}

const actor = fc.constantFrom(...MODEL_ACTORS);
const writer = fc.constantFrom(...MODEL_ACTORS.filter((a) => MODEL_ACCESS[a] === 'write'));
// Often the holder or the successor, so runs reach writes, offers and handoffs; otherwise anyone.
const someone = fc.oneof(
  { arbitrary: fc.constantFrom(HOLDER, HOLDER, SUCCESSOR, THIRD), weight: 3 },
  { arbitrary: writer, weight: 2 },
  { arbitrary: actor, weight: 1 },
);
const knows = { ownVersion: fc.boolean(), ownToken: fc.boolean() };
const successor = fc.oneof({ arbitrary: fc.constant(OTHER_WRITER), weight: 4 }, { arbitrary: actor, weight: 1 });
// Listed more than once: the calls that move the role and the content, so that runs get somewhere.
const take = someone.map((a) => new OpCommand({ op: 'take', actor: a }));
const write = fc.record({ actor: someone, ...knows }).map((p) => new OpCommand({ op: 'write', ...p }));
const offer = fc.record({ actor: someone, successor, ...knows }).map((p) => new OpCommand({ op: 'offer', ...p }));
const accept = fc.record({ actor: someone, ...knows }).map((p) => new OpCommand({ op: 'accept', ...p }));
const commands = [
  ...[take, take, take, write, write, write, offer, offer, offer, accept, accept],
  someone.map((a) => new OpCommand({ op: 'read', actor: a })),
  fc.record({ actor: someone, ...knows }).map((p) => new OpCommand({ op: 'heartbeat', ...p })),
  fc.constant(new OpCommand({ op: 'expire' })),
  someone.map((a) => new OpCommand({ op: 'decline', actor: a })),
  fc.record({ actor: someone, ...knows }).map((p) => new OpCommand({ op: 'withdraw', ...p })),
  fc.record({ actor, ...knows }).map((p) => new OpCommand({ op: 'suggest', ...p })),
  fc.record({ actor: someone, ...knows, pick: fc.nat(7) }).map((p) => new OpCommand({ op: 'approve', ...p })),
  fc.record({ actor: someone, ...knows }).map((p) => new OpCommand({ op: 'release', ...p })),
  someone.map((a) => new OpCommand({ op: 'checkView', actor: a })),
];

describe('shared objects: Postgres behaves like the in-memory model', () => {
  it('agrees on every outcome, event and state, and the log keeps the invariants', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: 'max' }), async (cmds) => {
        const key = uniqueObjectKey('model');
        const grants = { ...Object.fromEntries(Object.entries(MODEL_ACCESS).filter(([a]) => a !== 'A')), [OBSERVER]: 'view' as const };
        await insertObject(db.pool, 'A', key, grants, { silenceTimeoutMs: SILENCE_TIMEOUT_MS });
        const real: Real = { key, seq: (await objectEvents(db.pool, key)).length, suggestionIds: [] };
        await fc.asyncModelRun(() => ({ model: initialModel(), real }), cmds);

        // Invariants on the whole record: no gaps, tokens move by 1 per holder change, each change
        // has a reason and the previous holder, and every accepted write came from the holder with
        // the token in force at a version one past the last.
        const events = await objectEvents(db.pool, key);
        expect(logViolations(events)).toEqual([]);
        const fences = events.filter((e) => e.fence !== null).map((e) => e.fence!);
        expect(fences).toEqual([...fences].sort((a, b) => a - b));
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
