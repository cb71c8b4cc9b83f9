import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '../../src/errors.js';
import { HandoffPendingError, NoOpenOfferError, StaleWriteError } from '../../src/objects/errors.js';
import {
  acceptObject,
  approveSuggestion,
  declineObject,
  heartbeatObject,
  offerObject,
  releaseObject,
  showObject,
  suggestObjectChange,
  sweepSilentHolders,
  takeObject,
  withdrawOffer,
  writeObject,
} from '../../src/objects/objectStore.js';
import type { ObjectState } from '../../src/objects/types.js';
import { useTestDatabase } from '../helpers/db.js';
import { insertObject, logViolations, objectEvents, silenceHolder, uniqueObjectKey } from '../helpers/objects.js';

// Long past any silence timeout: if a timer could end an offer or turn silence into consent, it would have.
const A_LONG_SILENCE_MS = 24 * 60 * 60_000;

const db = useTestDatabase();

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the store accepted a call it should refuse'),
    (error: unknown) => error,
  );
}

/** An object B holds at version 1, offered to D; E is a third writer. */
async function offeredToD(): Promise<{ key: string; b: ObjectState }> {
  const key = uniqueObjectKey('plans/migration.md');
  await insertObject(db.pool, 'A', key, { B: 'write', D: 'write', E: 'write' });
  const taken = await takeObject(db.pool, 'B', { key });
  const b = await writeObject(db.pool, 'B', { key, version: 0, token: taken.token, content: 'plan v1' });
  const offered = await offerObject(db.pool, 'B', { key, token: b.token, version: b.version, successor: 'D' });
  expect(offered.offer).toMatchObject({ to: 'D', version: 1 });
  return { key, b };
}

async function kinds(key: string): Promise<string[]> {
  return (await objectEvents(db.pool, key)).map((e) => e.kind);
}

describe('handoff (O5)', () => {
  it('1. an offer names the successor and the version handed over, and only the current version can be offered', async () => {
    const { key, b } = await offeredToD();
    const offered = (await objectEvents(db.pool, key)).at(-1)!;
    expect(offered).toMatchObject({ kind: 'offered', actor: 'B', fence: b.token, version: 1, details: { successor: 'D' } });

    const stale = uniqueObjectKey('plans/stale');
    await insertObject(db.pool, 'A', stale, { B: 'write', D: 'write' });
    const t = await takeObject(db.pool, 'B', { key: stale });
    await writeObject(db.pool, 'B', { key: stale, version: 0, token: t.token, content: 'v1' });
    const refused = await refusal(offerObject(db.pool, 'B', { key: stale, token: t.token, version: 0, successor: 'D' }));
    expect(refused).toMatchObject({ name: 'StaleWriteError', refusal: 'version_moved', reason: 'version moved from 0 to 1' });
    expect(await refusal(offerObject(db.pool, 'B', { key: stale, token: t.token, version: 1, successor: 'nobody' }))).toBeInstanceOf(
      IllegalTransitionError,
    );
  });

  it("2. while the offer is open, the giver's writes are refused (and recorded); its heartbeat still counts", async () => {
    const { key, b } = await offeredToD();
    const write = await refusal(writeObject(db.pool, 'B', { key, version: 1, token: b.token, content: 'one more thing' }));
    expect(write).toBeInstanceOf(HandoffPendingError);
    expect(write).toMatchObject({ offeredTo: 'D', offeredVersion: 1, currentHolder: 'B', currentVersion: 1 });
    expect((write as HandoffPendingError).reason).toMatch(
      /^offer of \S+ to D at version 1 is open since \S+Z: withdraw it or wait for D to answer$/,
    );
    expect(await refusal(releaseObject(db.pool, 'B', { key, token: b.token }))).toBeInstanceOf(HandoffPendingError);
    expect(await refusal(offerObject(db.pool, 'B', { key, token: b.token, version: 1, successor: 'E' }))).toBeInstanceOf(
      HandoffPendingError,
    );
    const { suggestionId } = await suggestObjectChange(db.pool, 'E', { key, baseVersion: 1, content: 'plan v1 + E' });
    expect(await refusal(approveSuggestion(db.pool, 'B', { key, token: b.token, suggestionId }))).toBeInstanceOf(HandoffPendingError);
    await heartbeatObject(db.pool, 'B', { key, token: b.token });

    expect(await showObject(db.pool, 'A', { key })).toMatchObject({ version: 1, holder: 'B', offer: { to: 'D' } });
    expect((await kinds(key)).slice(-5)).toEqual([
      'handoff_pending_refused',
      'handoff_pending_refused',
      'handoff_pending_refused',
      'suggested',
      'handoff_pending_refused',
    ]);
  });

  it('3a. the successor accepts by saying so: it holds the role with a new token and the giver is fenced off', async () => {
    const { key, b } = await offeredToD();
    expect(await refusal(acceptObject(db.pool, 'D', { key, version: 0 }))).toMatchObject({ refusal: 'version_moved' });
    const d = await acceptObject(db.pool, 'D', { key, version: 1 });
    expect(d).toMatchObject({ holder: 'D', token: b.token + 1, version: 1, offer: null });
    const late = await refusal(writeObject(db.pool, 'B', { key, version: 1, token: b.token, content: 'too late' }));
    expect((late as StaleWriteError).reason).toMatch(/^role moved to D at \S+Z: offer accepted$/);
    const events = await objectEvents(db.pool, key);
    expect(events.find((e) => e.kind === 'accepted')).toMatchObject({
      actor: 'D',
      reason: 'accepted the offer from B at version 1',
      details: { from: 'B', to: 'D', via: 'accept' },
    });
    expect(logViolations(events)).toEqual([]);
  });

  it('3b. the successor accepts by writing, naming the offered version and the token in force', async () => {
    const { key, b } = await offeredToD();
    const d = await writeObject(db.pool, 'D', { key, version: 1, token: b.token, content: 'plan v2 by D' });
    expect(d).toMatchObject({ holder: 'D', token: b.token + 1, version: 2, offer: null });
    expect((await kinds(key)).slice(-2)).toEqual(['accepted', 'written']);
  });

  it('3c. the successor declines: the giver keeps the role and may write again', async () => {
    const { key, b } = await offeredToD();
    await declineObject(db.pool, 'D', { key, reason: 'busy with the parser' });
    expect(await refusal(acceptObject(db.pool, 'D', { key, version: 1 }))).toBeInstanceOf(NoOpenOfferError);
    expect(await writeObject(db.pool, 'B', { key, version: 1, token: b.token, content: 'plan v2 by B' })).toMatchObject({
      holder: 'B',
      token: b.token,
      version: 2,
    });
    expect((await kinds(key)).slice(-3)).toEqual(['declined', 'no_open_offer_refused', 'written']);
  });

  it('4. silence is never acceptance and no timer ends an offer', async () => {
    const { key, b } = await offeredToD();
    await silenceHolder(db.pool, key, A_LONG_SILENCE_MS);
    await db.pool.query(`UPDATE baton.object_offers SET offered_at = offered_at - interval '1 day' WHERE object_key = $1`, [key]);
    expect((await sweepSilentHolders(db.pool, 'sweeper')).map((s) => s.key)).not.toContain(key);

    const state = await showObject(db.pool, 'A', { key });
    expect(state).toMatchObject({ holder: 'B', token: b.token, holderSilent: false, offer: { to: 'D', version: 1 } });
    expect((await kinds(key)).at(-1)).toBe('offered');
    // Still open: D can accept a day later, and only because D said so.
    expect(await acceptObject(db.pool, 'D', { key, version: 1 })).toMatchObject({ holder: 'D' });
  });

  it('5. the giver may withdraw; the successor then learns the offer was withdrawn', async () => {
    const { key, b } = await offeredToD();
    await withdrawOffer(db.pool, 'B', { key, token: b.token });
    const late = await refusal(acceptObject(db.pool, 'D', { key, version: 1 }));
    expect(late).toBeInstanceOf(NoOpenOfferError);
    expect((late as NoOpenOfferError).reason).toMatch(/^the offer of \S+ to D at version 1 was withdrawn by B at \S+Z$/);
    expect(await refusal(withdrawOffer(db.pool, 'B', { key, token: b.token }))).toBeInstanceOf(NoOpenOfferError);
    expect(await writeObject(db.pool, 'B', { key, version: 1, token: b.token, content: 'plan v2' })).toMatchObject({ version: 2 });
  });

  it('6. the offer reserves nothing: a third agent takes the object, and the record says the offer was overtaken, by whom', async () => {
    const { key, b } = await offeredToD();
    const e = await takeObject(db.pool, 'E', { key, reason: 'release blocker' });
    expect(e).toMatchObject({ holder: 'E', token: b.token + 1, offer: null });

    const events = await objectEvents(db.pool, key);
    expect(events.slice(-2)).toMatchObject([
      { kind: 'overtaken', actor: 'E', details: { giver: 'B', successor: 'D', by: 'E' } },
      { kind: 'taken_over', actor: 'E', reason: 'release blocker', details: { from: 'B', to: 'E' } },
    ]);
    const accept = await refusal(acceptObject(db.pool, 'D', { key, version: 1 }));
    expect((accept as NoOpenOfferError).reason).toMatch(/^the offer of \S+ to D at version 1 was overtaken by E at \S+Z$/);
    const giver = await refusal(writeObject(db.pool, 'B', { key, version: 1, token: b.token, content: 'mine?' }));
    expect((giver as StaleWriteError).reason).toMatch(/^role moved to E at \S+Z: taken over$/);
    expect(logViolations(await objectEvents(db.pool, key))).toEqual([]);
  });

  it('the successor taking the object accepts the offer rather than overtaking it', async () => {
    const { key } = await offeredToD();
    await takeObject(db.pool, 'D', { key });
    const accepted = (await objectEvents(db.pool, key)).at(-1)!;
    expect(accepted).toMatchObject({ kind: 'accepted', details: { from: 'B', to: 'D', via: 'take' } });
  });
});
