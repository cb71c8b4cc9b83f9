import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { Confinement } from './isolation/confinement.js';
import { killAgentProcesses } from './isolation/isolateOwner.js';
import { spawnWithOutsideNetwork } from './isolation/sandboxNetwork.js';

/** Kept from the end of an agent's or verifier's output, for people; the digest covers all of it. */
const OUTPUT_TAIL_BYTES = 4_096;
/** Longest line of an agent's output passed on whole; a longer one is passed on in pieces this long. */
export const OUTPUT_LINE_MAX_CHARS = 64 * 1024;

/**
 * Names of the worker's environment an agent or verify command gets (S6): what a shell and git
 * need, nothing else; a trailing `*` matches a prefix. Every other variable (a cloud key, another
 * service's password) stays with the worker unless BATON_AGENT_ENV names it.
 */
const AGENT_ENV_DEFAULT = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_*', 'TZ', 'TERM', 'TMPDIR'] as const;
/** More names for agents, comma-separated, as AGENT_ENV_DEFAULT writes them (`ANTHROPIC_API_KEY,OPENAI_*`). */
const AGENT_ENV_ENV = 'BATON_AGENT_ENV';
// Never passed on, whatever BATON_AGENT_ENV says: database and Temporal credentials (S2, S4), and
// the worker's ways into a graph's remote (its SSH agent, askpass programs, git settings by environment).
const SECRET_ENV =
  /^(DATABASE_URL|PG[A-Z]*|TEMPORAL_.*|BATON_.*|SSH_AUTH_SOCK|SSH_ASKPASS|GIT_ASKPASS|GIT_SSH|GIT_SSH_COMMAND|GIT_CONFIG_.*)$/;

/** Whether `name` is one of `patterns` (a name, or a prefix ending in `*`). */
function envNameMatches(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
}

/** The environment for an agent or verify command: the allowed part of this process's, plus `extra`. */
export function childEnv(extra: Record<string, string>, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const allowed = [
    ...AGENT_ENV_DEFAULT,
    ...(env[AGENT_ENV_ENV] ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  ];
  const child: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (envNameMatches(name, allowed) && !SECRET_ENV.test(name)) child[name] = value;
  return { ...child, ...extra };
}

/** Starts `argv` as `confinement` says, in a process group of its own; stdin is closed. */
function spawnConfined(
  confinement: Confinement | undefined,
  argv: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; stdout: 'pipe' | number },
): ChildProcess {
  const full = [...(confinement?.prefix ?? []), ...argv];
  const spawnOptions = {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', options.stdout, 'pipe'] as ['ignore', 'pipe' | number, 'pipe'],
    ...confinement?.user,
  };
  if (confinement?.slirp4netns) return spawnWithOutsideNetwork(confinement.slirp4netns, full, spawnOptions);
  return spawn(full[0]!, full.slice(1), spawnOptions);
}

interface ProcessOutcome {
  exitCode: number;
  outputDigest: string;
  outputTail: string;
}

/**
 * Runs `sh -c command` in its own process group, streaming output lines to `onLine`. On `signal`
 * the whole group is killed, so nothing the command started outlives it; under a per-run user,
 * every process of that uid is killed as well, on cancellation and as soon as the command exits
 * (a background process it left would otherwise hold its output open).
 */
export function runShell(
  command: string,
  options: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    signal: AbortSignal;
    onLine?: (line: string) => void;
    onStart?: (pid: number) => void;
    confinement?: Confinement;
  },
): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const user = options.confinement?.user;
    const child = spawnConfined(options.confinement, ['sh', '-c', command], { cwd: options.cwd, env: options.env, stdout: 'pipe' });
    const hash = createHash('sha256');
    let tail = '';
    // Lines are put together per stream: half a line of one (a shell's error message is written in
    // parts) must not swallow a whole line of the other; nor is a character split across reads.
    const partial = { stdout: '', stderr: '' };
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    const onData = (stream: keyof typeof partial) => (chunk: Buffer) => {
      hash.update(chunk);
      const text = decoders[stream].write(chunk);
      tail = (tail + text).slice(-OUTPUT_TAIL_BYTES);
      const lines = (partial[stream] + text).split('\n');
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line);
      // Output that never ends a line is passed on in pieces: what is held back stays bounded, so
      // reading any output costs time in proportion to its size (S6).
      while (partial[stream].length > OUTPUT_LINE_MAX_CHARS) {
        options.onLine?.(partial[stream].slice(0, OUTPUT_LINE_MAX_CHARS));
        partial[stream] = partial[stream].slice(OUTPUT_LINE_MAX_CHARS);
      }
    };
    child.stdout!.on('data', onData('stdout'));
    child.stderr!.on('data', onData('stderr'));
    const kill = () => void killAgentProcesses({ pgid: child.pid, user });
    if (options.signal.aborted) kill();
    options.signal.addEventListener('abort', kill, { once: true });
    if (child.pid) options.onStart?.(child.pid);
    child.once('error', reject);
    // Settled only once the uid is empty: what runs next as that uid (git, collecting the commit) must not meet this kill.
    let leftoversKilled = Promise.resolve();
    if (user) child.once('exit', () => (leftoversKilled = killAgentProcesses({ user })));
    child.once('close', (code, sig) => {
      options.signal.removeEventListener('abort', kill);
      for (const rest of [partial.stdout, partial.stderr]) if (rest) options.onLine?.(rest);
      void leftoversKilled.then(() => {
        // Only a process our kill ended counts as cancelled: one that had already exited on its own
        // (even if not yet reaped when cancellation came) keeps its result.
        if (options.signal.aborted && sig === 'SIGKILL') {
          reject(options.signal.reason instanceof Error ? options.signal.reason : new Error('cancelled'));
          return;
        }
        resolve({ exitCode: code ?? 128 + (sig === 'SIGKILL' ? 9 : 15), outputDigest: `sha256:${hash.digest('hex')}`, outputTail: tail });
      });
    });
  });
}

/**
 * Runs a program to completion the way an agent runs (same user, same sandbox), for what the
 * worker must do in an agent's folder: there, config and hooks are the agent's, so they must not
 * run with the worker's rights. Resolves with stdout (unless `stdout` is a file descriptor to
 * write it to); rejects with the tail of stderr. Killed, with all it started, after `timeoutMs`.
 */
export function runConfined(
  confinement: Confinement,
  argv: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; stdout?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnConfined(confinement, argv, { cwd: options.cwd, env: options.env, stdout: options.stdout ?? 'pipe' });
    const out: Buffer[] = [];
    let err = '';
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-OUTPUT_TAIL_BYTES)));
    const timer = setTimeout(() => void killAgentProcesses({ pgid: child.pid, user: confinement.user }), options.timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`${argv.join(' ')} exited ${code ?? signal}: ${err.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}
