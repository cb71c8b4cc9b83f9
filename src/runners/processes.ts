import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';

/** Kept from the end of an agent's or verifier's output, for people; the digest covers all of it. */
export const OUTPUT_TAIL_BYTES = 4_096;

// Agents and verification commands never receive database or Temporal credentials (S2, S4).
const SECRET_ENV = /^(DATABASE_URL|PG[A-Z]*|TEMPORAL_.*|BATON_(?!TASK_|CLAIM|UPSTREAM|TOOL_).*)$/;

/** The environment for an agent or verifier: this process's, minus credentials, plus `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!SECRET_ENV.test(name)) env[name] = value;
  return { ...env, ...extra };
}

export interface ProcessOutcome {
  exitCode: number;
  outputDigest: string;
  outputTail: string;
}

/**
 * Runs `sh -c command` in its own process group, streaming output lines to `onLine`. On `signal`
 * the whole group is killed, so nothing the command started outlives it.
 */
export function runShell(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv; signal: AbortSignal; onLine?: (line: string) => void; onStart?: (pid: number) => void },
): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const hash = createHash('sha256');
    let tail = '';
    let partial = '';
    const onData = (chunk: Buffer) => {
      hash.update(chunk);
      const text = chunk.toString();
      tail = (tail + text).slice(-OUTPUT_TAIL_BYTES);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const kill = () => {
      if (child.pid) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
    if (options.signal.aborted) kill();
    options.signal.addEventListener('abort', kill, { once: true });
    if (child.pid) options.onStart?.(child.pid);
    child.once('error', reject);
    child.once('close', (code, sig) => {
      options.signal.removeEventListener('abort', kill);
      if (partial) options.onLine?.(partial);
      // Only a process our kill ended counts as cancelled: one that had already exited on its own
      // (even if not yet reaped when cancellation came) keeps its result.
      if (options.signal.aborted && sig === 'SIGKILL') {
        reject(options.signal.reason instanceof Error ? options.signal.reason : new Error('cancelled'));
        return;
      }
      resolve({ exitCode: code ?? 128 + (sig === 'SIGKILL' ? 9 : 15), outputDigest: `sha256:${hash.digest('hex')}`, outputTail: tail });
    });
  });
}
