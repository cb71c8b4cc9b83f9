// A state file planted where a command looks up for `baton dev` (a parent folder that someone else
// can write: an agent's checkout, a shared /tmp) must not point this user's commands at a stack of
// the planter's: found by looking up, it is used only when this user owns it and its folder, as git
// uses only a repository its user owns. BATON_HOME names a home on purpose, whoever owns it.
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devStackStateFile, findDevStack, type DevStackState } from '../../src/dev/devStackState.js';

/** A uid that is not this process's user (nobody). */
const STRANGER = 65534;

let project: string;
let home: string;
let below: string;

beforeAll(async () => {
  expect(process.geteuid?.(), 'run the tests as root (as .ci/run does): the test gives files to another user').toBe(0);
  project = await mkdtemp(path.join(tmpdir(), 'baton-planted-'));
  home = path.join(project, '.baton');
  below = path.join(project, 'checkout', 'deep');
  await mkdir(home);
  await mkdir(below, { recursive: true });
  // A stack that looks alive: the state names this very process.
  const state: DevStackState = {
    pid: process.pid,
    command: 'baton dev',
    home,
    startedAt: new Date().toISOString(),
    ready: true,
    postgres: { embedded: false, url: 'postgresql://planted@203.0.113.7:5432/baton' },
  };
  await writeFile(devStackStateFile(home), JSON.stringify(state));
});

afterAll(async () => {
  await rm(project, { recursive: true, force: true });
});

/** What `findDevStack` finds from `below`, and the notes it logs. */
async function find(env: NodeJS.ProcessEnv = {}) {
  const notes: string[] = [];
  const found = await findDevStack({ cwd: below, env, log: (line) => notes.push(line) });
  return { found, notes };
}

describe("finding baton dev by looking up, past another user's files", () => {
  it('uses a state file this user owns, in a folder this user owns', async () => {
    await chown(home, 0, 0);
    await chown(devStackStateFile(home), 0, 0);
    const { found, notes } = await find();
    expect(notes).toEqual([]);
    expect(found?.file).toBe(devStackStateFile(home));
  });

  it('passes over a state file another user owns, or one in a folder another user owns, naming the owner', async () => {
    for (const [owned, other] of [
      [devStackStateFile(home), home],
      [home, devStackStateFile(home)],
    ]) {
      await chown(other!, 0, 0);
      await chown(owned!, STRANGER, STRANGER);
      const { found, notes } = await find();
      expect(found).toBeUndefined();
      expect(notes).toEqual([
        `baton: passing over ${devStackStateFile(home)}: owned by uid ${STRANGER}, not by you (uid 0); ` +
          'to use a stack another user started, set BATON_HOME to its folder',
      ]);
      await chown(owned!, 0, 0);
    }
  });

  it('uses a home another user owns when BATON_HOME names it', async () => {
    await chown(home, STRANGER, STRANGER);
    await chown(devStackStateFile(home), STRANGER, STRANGER);
    const { found, notes } = await find({ BATON_HOME: home });
    expect(notes).toEqual([]);
    expect(found?.home).toBe(home);
  });
});
