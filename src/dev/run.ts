import { execFile } from 'node:child_process';

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs a program to completion and returns its output; rejects with its stderr on failure. */
export function run(
  file: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
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
  });
}
