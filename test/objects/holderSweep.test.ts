// Silence recorded on time (U11): a worker records the loss of a silent holder's role within about
// a second of its silence timeout, with no call on the object; without the sweep the loss waits for
// whoever calls next. Real Postgres and real Temporal workers; the holder's silence is made by
// moving its last heartbeat into the past on the database's clock, never by sleeping.
import { describe, expect, it } from 'vitest';
import { NotReadyError, waitFor } from '../../src/dev/waitFor.js';
import { showObject, takeObject } from '../../src/objects/objectStore.js';
import type { ObjectEvent } from '../../src/objects/types.js';
import { insertObject, logViolations, objectEvents, silenceHolder, uniqueObjectKey } from '../helpers/objects.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();
/** Far past the object's silence timeout. */
const LONG_SILENT_MS = 10 * 60_000;
/** How long the negative control gives a worker that does not sweep: several sweep rounds. */
const WITHOUT_SWEEP_WAIT_MS = 3_000;

/** An object held by B, whose last heartbeat was long ago: silent on the database clock. */
async function silentlyHeld(): Promise<string> {
  const key = uniqueObjectKey('sweep');
  await insertObject(stack.db.pool, 'A', key, { B: 'write', D: 'write' });
  await takeObject(stack.db.pool, 'B', { key });
  await silenceHolder(stack.db.pool, key, LONG_SILENT_MS);
  expect(await showObject(stack.db.pool, 'A', { key })).toMatchObject({ holder: 'B', holderSilent: true });
  return key;
}

const lossOf = (key: string, timeoutMs: number) =>
  waitFor(
    `the loss of ${key}'s role to be recorded`,
    async () => {
      const loss = (await objectEvents(stack.db.pool, key)).find((e) => e.kind === 'reclaimed_after_silence');
      if (!loss) throw new Error('not recorded yet');
      return loss;
    },
    { timeoutMs, intervalMs: 100 },
  );

describe('silent holders, swept by the workers', () => {
  it("records the silent holder's loss of the role with its reason, with no call on the object", async () => {
    const login = await stack.db.login('baton_worker');
    const worker = await stack.temporal.createWorker(login.pool);
    const key = await silentlyHeld();
    const loss: ObjectEvent = await worker.runUntil(lossOf(key, 60_000));

    expect(loss).toMatchObject({ actor: worker.identity, details: { detected_by: 'sweep', from: 'B' } });
    expect(loss.reason).toContain('B');
    expect(await showObject(stack.db.pool, 'A', { key })).toMatchObject({ holder: null, holderSilent: false });
    expect(logViolations(await objectEvents(stack.db.pool, key))).toEqual([]);
  });

  it('negative control: with the sweep off, the loss waits for the next call on the object', async () => {
    const login = await stack.db.login('baton_worker');
    const worker = await stack.temporal.createWorker(login.pool, { holderSweep: false });
    const key = await silentlyHeld();
    await worker.runUntil(expect(lossOf(key, WITHOUT_SWEEP_WAIT_MS)).rejects.toBeInstanceOf(NotReadyError));
    expect(await showObject(stack.db.pool, 'A', { key })).toMatchObject({ holder: 'B', holderSilent: true });

    await takeObject(stack.db.pool, 'D', { key });
    expect(await lossOf(key, 1_000)).toMatchObject({ actor: 'D', details: { detected_by: 'take' } });
  });
});
