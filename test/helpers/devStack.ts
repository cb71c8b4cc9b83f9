// `baton dev` as the tests run it: a real process, found afterwards the way other commands find it.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { devLoginUrl, type DevComponent } from '../../src/dev/devLogins.js';
import { devStackStateFile, type DevStackState } from '../../src/dev/devStackState.js';
import { embeddedPostgresUrl } from '../../src/dev/embeddedPostgres.js';
import type { BatonCommand } from '../../src/testkit/workerProcess.js';
import { startCli, type CliProcess } from './cli.js';

export interface RunningDev {
  dev: CliProcess;
  /** Its baton home: BATON_HOME, else `.baton` in the folder it runs in. */
  home: string;
  /** What its state file says once it is ready. */
  state: DevStackState;
}

/** Starts `baton dev` on free ports (plus `args`) and waits until it says it is ready. */
export async function startDev(env: NodeJS.ProcessEnv, command: BatonCommand = {}, args: string[] = []): Promise<RunningDev> {
  const dev = startCli(
    ['dev', '--postgres-port', '0', '--temporal-port', '0', '--ui-port', '0', '--page-port', '0', '--ops-port', '0', ...args],
    env,
    command,
  );
  await dev.waitForOutput(/Ready; worker polling/);
  const cwd = command.cwd ?? process.cwd();
  const home = env.BATON_HOME ? path.resolve(cwd, env.BATON_HOME) : path.join(cwd, '.baton');
  return { dev, home, state: await devStackState(home) };
}

/** The state file of the stack in `home`. */
export async function devStackState(home: string): Promise<DevStackState> {
  return JSON.parse(await readFile(devStackStateFile(home), 'utf8')) as DevStackState;
}

/** `component`'s login on the embedded Postgres of the stack in `home`, built as commands without DATABASE_URL build it. */
export async function devLogin(home: string, component: DevComponent): Promise<string> {
  const { postgres } = await devStackState(home);
  if (!postgres?.embedded) throw new Error(`the stack in ${home} has no embedded Postgres`);
  return devLoginUrl(embeddedPostgresUrl(postgres.port, '', postgres.database), home, component);
}

/** Every secret the stack in `home` generated (its credentials folder). */
export async function devSecrets(home: string): Promise<string[]> {
  const folder = path.join(home, 'credentials');
  const files = (await readdir(folder)).filter((f) => !f.endsWith('.partial'));
  return Promise.all(files.map(async (f) => (await readFile(path.join(folder, f), 'utf8')).trim()));
}
