// Where a running local stack is, for every other shell: `<home>/dev-stack.json`, written by the
// process that starts the stack's servers and removed when it stops. It holds ports, addresses,
// process ids and the home, never a secret (the logins' passwords stay in `<home>/credentials`).
// Made before anything starts, it is also the home's lock: another start there is refused while
// the process it names is alive, and takes the home over once that process is gone.
import { link, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BATON_HOME_DIR_NAME, BATON_HOME_ENV, DEV_STACK_STATE_FILE_NAME, readEnv } from '../config.js';
import type { Log } from '../log.js';
import { DevStackRunningError } from './errors.js';
import { processAlive } from './run.js';

/** What `<home>/dev-stack.json` says. */
export interface DevStackState {
  /** The process that started the stack, and stops it. */
  pid: number;
  /** Its command line, for messages (`baton dev --ui-port 0`). */
  command: string;
  /** The baton home, absolute. */
  home: string;
  startedAt: string;
  /** Whether other commands may use it: its schema is current and its logins exist. */
  ready: boolean;
  /** The embedded Postgres started here (on 127.0.0.1), or the one DATABASE_URL gave it (URL without its password). */
  postgres?: { embedded: true; host: string; port: number; database: string } | { embedded: false; url: string };
  /** The Temporal frontend it uses; `pid` is set when the dev server was started here. */
  temporal?: { address: string; namespace: string; uiUrl?: string; pid?: number };
}

/** The state file of the stack in `home`. */
export function devStackStateFile(home: string): string {
  return path.join(home, DEV_STACK_STATE_FILE_NAME);
}

/** `Postgres 127.0.0.1:54329, Temporal 127.0.0.1:17233`: where the stack a state file describes runs. */
function describeDevStack(state: DevStackState): string {
  const postgres = state.postgres?.embedded ? `Postgres ${state.postgres.host}:${state.postgres.port}` : undefined;
  const temporal = state.temporal ? `Temporal ${state.temporal.address}` : undefined;
  return [postgres, temporal].filter(Boolean).join(', ');
}

async function readState(file: string): Promise<DevStackState | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const state = JSON.parse(text) as DevStackState;
  if (!Number.isInteger(state.pid)) throw new Error(`${file} names no process id`);
  return state;
}

function stateText(state: DevStackState): string {
  return `${JSON.stringify(state, null, 2)}\n`;
}

/** This process's command line, shortened for messages: `baton dev --ui-port 0`. */
function commandLine(): string {
  const script = path.basename(process.argv[1] ?? 'node').replace(/\.[cm]?[jt]s$/, '');
  return [script, ...process.argv.slice(2)].join(' ');
}

/** A baton home taken by this process for the stack it starts. */
interface DevStackHomeClaim {
  /** What the state file said when the home was taken over from a process that is gone. */
  stale?: DevStackState;
  /** Rewrites the state file with `change` applied. */
  update(change: Partial<DevStackState>): Promise<void>;
  /** Removes the state file, if it is still this process's. */
  release(): Promise<void>;
}

/**
 * Takes `home` for a stack this process starts: writes its state file, not yet ready.
 * @throws DevStackRunningError when the state file names a process that is alive.
 */
export async function claimDevStackHome(home: string, log: Log): Promise<DevStackHomeClaim> {
  await mkdir(home, { recursive: true });
  const file = devStackStateFile(home);
  let state: DevStackState = { pid: process.pid, command: commandLine(), home, startedAt: new Date().toISOString(), ready: false };
  const write = async (flag: 'create' | 'replace') => {
    const partial = `${file}.${process.pid}.partial`;
    await writeFile(partial, stateText(state));
    try {
      // A hard link appears whole and fails if the file exists: a reader never sees half a file.
      if (flag === 'create') await link(partial, file);
      else await rename(partial, file);
    } finally {
      await rm(partial, { force: true });
    }
  };
  let stale: DevStackState | undefined;
  for (;;) {
    try {
      await write('create');
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const existing = await readState(file).catch(() => undefined);
    if (existing && (await processAlive(existing.pid))) {
      throw new DevStackRunningError(home, existing.pid, describeDevStack(existing), existing.command);
    }
    log(
      existing
        ? `${file} names \`${existing.command}\` (pid ${existing.pid}), which is gone without stopping its stack; taking ${home} over.`
        : `${file} cannot be read; taking ${home} over.`,
    );
    stale = existing ?? stale;
    await rm(file, { force: true });
  }
  return {
    stale,
    update: async (change) => {
      state = { ...state, ...change };
      await write('replace');
    },
    release: async () => {
      const current = await readState(file).catch(() => undefined);
      if (current?.pid === process.pid) await rm(file, { force: true });
    },
  };
}

/** A running stack found by `findDevStack`. */
export interface FoundDevStack {
  /** Its state file. */
  file: string;
  /** Its baton home: the state file's folder (its credentials are there). */
  home: string;
  state: DevStackState;
}

/**
 * The stack a command uses when DATABASE_URL does not name a database, found the way git finds its
 * folder: `$BATON_HOME/dev-stack.json` when BATON_HOME is set (and nowhere else), otherwise
 * `.baton/dev-stack.json` in `cwd` or the nearest parent folder that has one whose process runs.
 * A state file whose process is gone is passed over with a note. So is one found by looking up
 * that another user owns (the file or its folder), as git refuses a repository another user owns:
 * anyone who can write a folder above this one (an agent's checkout, a shared /tmp) could
 * otherwise point this user's commands at a stack of theirs.
 */
export async function findDevStack(options: { log: Log; cwd?: string; env?: NodeJS.ProcessEnv }): Promise<FoundDevStack | undefined> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const given = readEnv(BATON_HOME_ENV, options.env);
  const homes: string[] = [];
  if (given) homes.push(path.resolve(cwd, given));
  else
    for (let dir = cwd; ; dir = path.dirname(dir)) {
      homes.push(path.join(dir, BATON_HOME_DIR_NAME));
      if (dir === path.dirname(dir)) break;
    }
  for (const home of homes) {
    const file = devStackStateFile(home);
    const state = await readState(file).catch((error: Error) => {
      options.log(`baton: passing over ${file}: ${error.message}`);
      return undefined;
    });
    if (!state) continue;
    const owner = given ? undefined : await anotherOwner([home, file]);
    if (owner) {
      options.log(
        `baton: passing over ${file}: owned by uid ${owner.uid}, not by you (uid ${owner.me}); ` +
          `to use a stack another user started, set ${BATON_HOME_ENV} to its folder`,
      );
      continue;
    }
    if (await processAlive(state.pid)) return { file, home, state };
    options.log(`baton: passing over ${file}: \`${state.command}\` (pid ${state.pid}) is gone; it did not stop cleanly.`);
  }
  return undefined;
}

/** The owner of the first of `paths` this process's user (`me`) does not own, if any (none where there are no uids). */
async function anotherOwner(paths: string[]): Promise<{ uid: number; me: number } | undefined> {
  const me = process.geteuid?.();
  if (me === undefined) return undefined;
  for (const p of paths) {
    const { uid } = await stat(p);
    if (uid !== me) return { uid, me };
  }
  return undefined;
}

/** Where `findDevStack` looks, for messages: `BATON_HOME (/x/.baton)` or `.baton/ in /x/y and its parents`. */
export function devStackSearchPath(options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const given = readEnv(BATON_HOME_ENV, options.env);
  return given ? `${path.resolve(cwd, given)} (${BATON_HOME_ENV})` : `${BATON_HOME_DIR_NAME}/ in ${cwd} and its parents`;
}
