import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BATON_BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the output once `pattern` appears; rejects if the process exits first. */
  waitForOutput(pattern: RegExp): Promise<RegExpExecArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Starts `baton <args>` as a real child process. */
export function startCli(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  const child = spawn(process.execPath, [BATON_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    exited,
    waitForOutput: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) {
            listeners.delete(check);
            resolve(match);
          }
        };
        listeners.add(check);
        check();
        void exited.then((code) => {
          listeners.delete(check);
          if (!pattern.exec(output)) reject(new Error(`baton ${args.join(' ')} exited (${code}) before printing ${pattern}:\n${output}`));
        });
      }),
  };
}

/** Runs `baton <args>` to completion. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string; stdout: string }> {
  const child = spawn(process.execPath, [BATON_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let output = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    output += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output, stdout };
}

/** The environment of this process without baton's deployment variables, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, TEMPORAL_ADDRESS: _t, TEMPORAL_NAMESPACE: _n, BATON_HOME: _h, ...rest } = process.env;
  return { ...rest, ...extra };
}
