import type { ChildProcess } from 'node:child_process';
import { waitFor } from '../../src/dev/waitFor.js';
import { spawnBaton, watchChild, type BatonCommand } from '../../src/testkit/workerProcess.js';

/** How long `waitForOutput` waits: as long as a test may run (a hang guard; a busy machine may be slow). */
const OUTPUT_TIMEOUT_MS = 600_000;

export interface CliProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the output once `pattern` appears; rejects if the process exits first. */
  waitForOutput(pattern: RegExp): Promise<RegExpExecArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** An error with the output once the process has ended other than with exit 0; undefined while it runs or after it succeeded. */
  failure(): Error | undefined;
}

/** Starts `baton <args>` as a real child process. */
export function startCli(args: string[], env: NodeJS.ProcessEnv, command?: BatonCommand): CliProcess {
  const child = spawnBaton(args, env, command);
  const { output } = watchChild(child, { tailChars: Infinity });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    output,
    exited,
    failure: () =>
      gone() && child.exitCode !== 0
        ? new Error(`baton ${args.join(' ')} failed (${child.exitCode ?? child.signalCode}):\n${output()}`)
        : undefined,
    waitForOutput: (pattern) =>
      waitFor(
        `baton ${args.join(' ')} to print ${pattern}`,
        async () => {
          const match = pattern.exec(output());
          if (!match) throw new Error(`not printed yet:\n${output()}`);
          return match;
        },
        {
          timeoutMs: OUTPUT_TIMEOUT_MS,
          intervalMs: 50,
          abort: () =>
            gone() && !pattern.test(output())
              ? new Error(`baton ${args.join(' ')} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${output()}`)
              : undefined,
        },
      ),
  };
}

/** Runs `baton <args>` to completion: its exit code, stdout and stderr, and both as they interleaved (`output`). */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  command?: BatonCommand,
): Promise<{ code: number | null; output: string; stdout: string; stderr: string }> {
  const child = spawnBaton(args, env, command);
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString();
    output += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
    output += c.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output, stdout, stderr };
}

/** The environment of this process without baton's deployment variables, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, TEMPORAL_ADDRESS: _t, TEMPORAL_NAMESPACE: _n, BATON_HOME: _h, ...rest } = process.env;
  return { ...rest, ...extra };
}
