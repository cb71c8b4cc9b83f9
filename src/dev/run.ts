import { execFile } from 'node:child_process';
import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';

interface RunResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs a program to completion and returns its output; rejects with its stderr on failure.
 * `onLine` is given each line of its stdout and stderr as it comes (say, to show progress).
 */
export function run(
  file: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; onLine?: (line: string) => void } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { env: options.env ?? process.env, cwd: options.cwd, timeout: options.timeoutMs ?? 0, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const detail = String(stderr).trim().split('\n').slice(-5).join('\n');
          reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}${detail ? `\n${detail}` : ''}`));
        } else {
          resolve({ stdout: String(stdout), stderr: String(stderr) });
        }
      },
    );
    const { onLine } = options;
    if (onLine) for (const stream of [child.stdout, child.stderr]) stream && eachLine(stream, onLine);
  });
}

/** Calls `onLine` with each non-empty line `stream` gives, as it comes (a line cut by a chunk is held until it ends). */
function eachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let partial = '';
  const emit = (line: string) => {
    if (line.trim()) onLine(line.trim());
  };
  stream.on('data', (chunk: Buffer | string) => {
    const lines = (partial + String(chunk)).split(/\r?\n|\r/);
    partial = lines.pop() ?? '';
    lines.forEach(emit);
  });
  stream.on('end', () => emit(partial));
}

/** The first executable `program` on PATH, or undefined. */
export async function findProgram(program: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, program);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}

/** Whether a process with this id runs (a zombie, exited and not yet reaped, does not). */
export async function processAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // Linux's /proc says whether it is a zombie (the field after the parenthesised name).
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat === undefined || stat.slice(stat.lastIndexOf(')') + 1).trim()[0] !== 'Z';
}
