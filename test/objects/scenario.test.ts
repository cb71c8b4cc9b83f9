import { ApplicationFailure } from '@temporalio/common';
import { Command } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { createObjectActivities } from '../../activities/objects.js';
import { registerObjectCommands } from '../../src/cli/objectCommands.js';
import { InvalidInputError, NotFoundError, ObjectExistsError } from '../../src/errors.js';
import { PermissionDeniedError, StaleViewError, StaleWriteError } from '../../src/objects/errors.js';
import { objectLog } from '../../src/objects/objectLog.js';
import {
  checkObjectView,
  createObject,
  heartbeatObject,
  readObject,
  releaseObject,
  showObject,
  sweepSilentHolders,
  takeObject,
  writeObject,
} from '../../src/objects/objectStore.js';
import { useTestDatabase } from '../helpers/db.js';
import { insertObject, logViolations, objectEvents, silenceHolder, uniqueObjectKey } from '../helpers/objects.js';

const SILENCE_TIMEOUT_MS = 30_000;
// Far past the timeout, so the scenario does not depend on how long the test itself takes.
const SILENT_FOR_MS = 10 * 60_000;
const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

const db = useTestDatabase();

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the store accepted a call it should refuse'),
    (error: unknown) => error,
  );
}

describe('shared object scenario: B holds a shared image and goes silent; D takes it without waiting', () => {
  it("refuses B's late write with the reason, and the log tells the story in event kinds", async () => {
    const key = uniqueObjectKey('images/hero.png');
    await insertObject(db.pool, 'A', key, { B: 'write', D: 'write' }, { silenceTimeoutMs: SILENCE_TIMEOUT_MS });

    const b = await takeObject(db.pool, 'B', { key });
    const seenByB = await readObject(db.pool, 'B', { key });
    await writeObject(db.pool, 'B', { key, version: seenByB.version, token: b.token, contentRef: 'file:///render/hero-1.png#sha256=aa' });
    await heartbeatObject(db.pool, 'B', { key, token: b.token });

    await silenceHolder(db.pool, key, SILENT_FOR_MS);
    expect(await showObject(db.pool, 'D', { key })).toMatchObject({ holder: 'B', holderSilent: true });

    const d = await takeObject(db.pool, 'D', { key, reason: 'the page ships tonight' });
    expect(d).toMatchObject({ holder: 'D', token: b.token + 1, holderSilent: false });
    const seenByD = await readObject(db.pool, 'D', { key });
    expect(seenByD.contentRef).toBe('file:///render/hero-1.png#sha256=aa');
    await writeObject(db.pool, 'D', { key, version: seenByD.version, token: d.token, contentRef: 'file:///render/hero-2.png#sha256=bb' });

    // B comes back and writes on what it last saw, with the token it had.
    const late = await refusal(writeObject(db.pool, 'B', { key, version: 1, token: b.token, contentRef: 'file:///render/hero-1b.png' }));
    expect(late).toBeInstanceOf(StaleWriteError);
    expect(late).toMatchObject({ refusal: 'token_moved', currentHolder: 'D', currentToken: d.token, currentVersion: 2 });
    expect((late as StaleWriteError).reason).toMatch(new RegExp(`^role moved to D at ${ISO}: reclaimed after silence$`));
    expect(await refusal(heartbeatObject(db.pool, 'B', { key, token: b.token }))).toBeInstanceOf(StaleWriteError);
    // Before anything irreversible, B's view is stale.
    expect(await refusal(checkObjectView(db.pool, 'B', { key }))).toBeInstanceOf(StaleViewError);

    await releaseObject(db.pool, 'D', { key, token: d.token, reason: 'hero image done' });

    const log = await objectLog(db.pool, 'A', { key });
    expect(log.map((e) => [e.kind, e.actor])).toEqual([
      ['created', 'A'],
      ['granted', 'A'],
      ['granted', 'A'],
      ['taken', 'B'],
      ['written', 'B'],
      ['reclaimed_after_silence', 'D'],
      ['written', 'D'],
      ['stale_write_refused', 'B'],
      ['stale_write_refused', 'B'],
      ['stale_view_refused', 'B'],
      ['released', 'D'],
    ]);
    const reclaimed = log.find((e) => e.kind === 'reclaimed_after_silence')!;
    expect(reclaimed).toMatchObject({ fence: d.token, details: { from: 'B', to: 'D', silence_timeout_ms: SILENCE_TIMEOUT_MS } });
    expect(reclaimed.reason).toMatch(new RegExp(`^B silent since ${ISO}, past its 30000 ms silence timeout$`));
    expect(log.filter((e) => e.kind === 'stale_write_refused').map((e) => e.details)).toEqual([
      expect.objectContaining({ operation: 'write', refusal: 'token_moved', token: b.token }),
      expect.objectContaining({ operation: 'heartbeat', refusal: 'token_moved', token: b.token }),
    ]);
    expect(logViolations(log)).toEqual([]);
  });

  it('lets D take over at once while B is still within its timeout, and tells B it was taken over', async () => {
    const key = uniqueObjectKey('images/logo.png');
    await insertObject(db.pool, 'A', key, { B: 'write', D: 'write' });
    const b = await takeObject(db.pool, 'B', { key });
    const d = await takeObject(db.pool, 'D', { key });
    const late = await refusal(writeObject(db.pool, 'B', { key, version: 0, token: b.token, content: 'B was here' }));
    expect((late as StaleWriteError).reason).toMatch(new RegExp(`^role moved to D at ${ISO}: taken over$`));
    const events = await objectEvents(db.pool, key);
    expect(events.slice(-2)).toMatchObject([
      { kind: 'taken_over', actor: 'D', fence: d.token, reason: 'taken over from B', details: { from: 'B', to: 'D' } },
      { kind: 'stale_write_refused', actor: 'B' },
    ]);
  });

  it('reclaims a silent holder nobody took over at the sweep, and does the same when the holder itself writes first', async () => {
    const swept = uniqueObjectKey('plans/swept');
    const touched = uniqueObjectKey('plans/touched');
    for (const key of [swept, touched]) {
      await insertObject(db.pool, 'A', key, { B: 'write' });
      await takeObject(db.pool, 'B', { key });
      await silenceHolder(db.pool, key, SILENT_FOR_MS);
    }

    const late = await refusal(writeObject(db.pool, 'B', { key: touched, version: 0, token: 1, content: 'late' }));
    expect((late as StaleWriteError).reason).toMatch(new RegExp(`^role moved to nobody at ${ISO}: reclaimed after silence$`));
    const result = await sweepSilentHolders(db.pool, 'sweeper');
    expect(result.filter((r) => r.key === swept || r.key === touched)).toEqual([{ key: swept, silentHolder: 'B', token: 2 }]);

    // Whichever noticed first, the record is the same: B lost the role because it went silent.
    for (const [key, detectedBy] of [
      [swept, 'sweep'],
      [touched, 'write'],
    ] as const) {
      const events = await objectEvents(db.pool, key);
      expect(events.find((e) => e.kind === 'reclaimed_after_silence')).toMatchObject({
        fence: 2,
        details: { from: 'B', to: null, detected_by: detectedBy },
      });
      expect(await showObject(db.pool, 'A', { key })).toMatchObject({ holder: null, token: 2 });
      expect(logViolations(events)).toEqual([]);
    }
  });

  it('refuses what a caller may not do, and reports bad input without writing anything', async () => {
    const key = uniqueObjectKey('configs/app.yaml');
    await insertObject(db.pool, 'A', key, { V: 'view' });
    expect(await refusal(takeObject(db.pool, 'V', { key }))).toBeInstanceOf(PermissionDeniedError);
    expect(await refusal(readObject(db.pool, 'stranger', { key }))).toBeInstanceOf(PermissionDeniedError);
    expect(await refusal(createObject(db.pool, 'A', { key }))).toBeInstanceOf(ObjectExistsError);
    expect(await refusal(takeObject(db.pool, 'A', { key: uniqueObjectKey('missing') }))).toBeInstanceOf(NotFoundError);
    expect(await refusal(takeObject(db.pool, 'A', { key: '../etc/passwd' }))).toBeInstanceOf(InvalidInputError);
    expect(await refusal(writeObject(db.pool, 'A', { key, version: -1, token: 0, content: 'x' }))).toBeInstanceOf(InvalidInputError);
    expect((await objectEvents(db.pool, key)).map((e) => e.kind)).toEqual([
      'created',
      'granted',
      'permission_refused',
      'permission_refused',
    ]);
  });
});

describe('the Temporal activities', () => {
  it("act as the worker's own identity and fail for good, with the reason, when the store refuses", async () => {
    const key = uniqueObjectKey('images/activity.png');
    await insertObject(db.pool, 'A', key, { B: 'write', D: 'write' });
    const asB = createObjectActivities({ db: db.pool, actor: 'B' });
    const asD = createObjectActivities({ db: db.pool, actor: 'D' });
    const b = await asB.batonTakeObject({ key });
    await asD.batonTakeObject({ key });

    const failure = await refusal(asB.batonWriteObject({ key, version: 0, token: b.token, contentRef: 'file:///b.png' }));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'StaleWriteError', nonRetryable: true });
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({ refusal: 'token_moved', currentHolder: 'D', currentToken: 2 });
    expect(await refusal(asB.batonWriteObject({ key, version: 0, token: 2, content: 'x'.repeat(70_000) }))).toMatchObject({
      type: 'InvalidInputError',
      nonRetryable: true,
    });
    expect(await asD.batonReadObject({ key })).toMatchObject({ holder: 'D', contentRef: null, hasInlineContent: false });
  });
});

describe('the CLI replays the scenario', () => {
  function restoreEnv(name: string, value: string | undefined): void {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }

  async function baton(...args: string[]): Promise<{ out: string; error?: Error }> {
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (lines.push(String(chunk)), true));
    const program = new Command().exitOverride();
    registerObjectCommands(program, (line) => lines.push(`${line}\n`));
    try {
      await program.parseAsync(['object', ...args], { from: 'user' });
      return { out: lines.join('') };
    } catch (error) {
      return { out: lines.join(''), error: error as Error };
    } finally {
      write.mockRestore();
    }
  }

  it('prints the refusal with its reason and the log with the story', async () => {
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = db.url;
    try {
      const key = uniqueObjectKey('images/banner.png');
      expect((await baton('create', key, '--as', 'A', '--default-access', 'write')).error).toBeUndefined();
      expect((await baton('take', key, '--as', 'B')).out).toContain(`${key}: version 0, token 1\n  holder: B since`);
      expect((await baton('write', key, '--as', 'B', '--version', '0', '--token', '1', '--ref', 'file:///b1.png')).error).toBeUndefined();
      await silenceHolder(db.pool, key, SILENT_FOR_MS);
      expect((await baton('show', key, '--as', 'D')).out).toContain('SILENT');
      expect((await baton('take', key, '--as', 'D')).out).toContain(`${key}: version 1, token 2\n  holder: D since`);
      const late = await baton('write', key, '--as', 'B', '--version', '1', '--token', '1', '--ref', 'file:///b2.png');
      expect(late.error?.message).toMatch(new RegExp(`^write of ${key} by B refused: role moved to D at ${ISO}: reclaimed after silence$`));
      const log = await baton('log', key, '--as', 'A');
      expect(
        log.out
          .split('\n')
          .filter(Boolean)
          .map((line) => line.trim().split(/\s{2,}/)[2]),
      ).toEqual(['created', 'taken', 'written', 'reclaimed_after_silence', 'stale_write_refused']);
      expect(log.out).toContain('role moved to D at');
    } finally {
      restoreEnv('DATABASE_URL', saved);
    }
  });

  it('says how to name yourself and which database to use when either is missing', async () => {
    const saved = { url: process.env.DATABASE_URL, actor: process.env.BATON_ACTOR };
    delete process.env.BATON_ACTOR;
    process.env.DATABASE_URL = db.url;
    try {
      expect((await baton('show', 'anything')).error?.message).toMatch(/--as <actor> or BATON_ACTOR/);
      process.env.DATABASE_URL = 'postgresql://nobody:nothing@127.0.0.1:1/none';
      expect((await baton('show', 'anything', '--as', 'A')).error?.message).toMatch(/cannot reach Postgres at DATABASE_URL.*npx baton dev/);
    } finally {
      restoreEnv('DATABASE_URL', saved.url);
      restoreEnv('BATON_ACTOR', saved.actor);
    }
  });
});
