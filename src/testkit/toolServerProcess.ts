// The fake tool server as a child process, and a client of its control routes.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../dev/waitFor.js';
import { startToolServer, type ToolEffect, type ToolFault, type ToolServerOptions } from './toolServer.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const READY_LINE = /^tool server listening on (http:\/\/\S+)$/m;
const START_TIMEOUT_MS = 30_000;
/** How often `waitForHeld` asks the tool server. */
const HELD_POLL_MS = 20;

/** Drives a drill tool server over its control routes, wherever it runs. */
export interface ToolServerControl {
  url: string;
  /** Queues faults for the next deliveries (or lookups) of `key`. */
  setFaults(key: string, faults: ToolFault[]): Promise<void>;
  /** Every effect the tool performed, in order. */
  effects(): Promise<ToolEffect[]>;
  /** Keys whose requests are held right now (`hold_after_commit`, `hold_before_commit`). */
  held(): Promise<string[]>;
  /** Resolves once a request for `key` is held; rejects with NotReadyError after `timeoutMs`. */
  waitForHeld(key: string, timeoutMs: number): Promise<void>;
  release(key: string): Promise<boolean>;
}

export function toolServerControl(url: string): ToolServerControl {
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`tool server ${method} ${path}: HTTP ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const held = async () => (await call<{ keys: string[] }>('GET', '/_control/held')).keys;
  return {
    url,
    setFaults: async (key, faults) => void (await call('POST', '/_control/faults', { key, faults })),
    effects: async () => (await call<{ effects: ToolEffect[] }>('GET', '/_control/ledger')).effects,
    held,
    waitForHeld: (key, timeoutMs) =>
      waitFor(
        `a request for ${key} to be held at the tool`,
        async () => {
          if (!(await held()).includes(key)) throw new Error('none held yet');
        },
        { timeoutMs, intervalMs: HELD_POLL_MS },
      ),
    release: async (key) => (await call<{ released: boolean }>('POST', '/_control/release', { key })).released,
  };
}

/** Effects beyond the first per key: each one is the world changed twice by one call. */
export function countDuplicateEffects(effects: readonly ToolEffect[]): number {
  const perKey = new Map<string, number>();
  for (const e of effects) perKey.set(e.key, (perKey.get(e.key) ?? 0) + 1);
  return [...perKey.values()].reduce((sum, n) => sum + n - 1, 0);
}

export interface ToolServerProcess extends ToolServerControl {
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts the drill tool server as its own OS process, so its faults (resets, hangs, held answers)
 * are real network behaviour and outlive any worker process the drill kills.
 */
export async function spawnToolServer(options: ToolServerOptions = {}): Promise<ToolServerProcess> {
  const args = ['--import', import.meta.resolve('tsx'), THIS_FILE, JSON.stringify(options)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`tool server did not start within ${START_TIMEOUT_MS} ms:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = READY_LINE.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`tool server exited (${code}) before listening:\n${output}`));
    });
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    ...toolServerControl(url),
    child,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[1] === THIS_FILE) {
  const server = await startToolServer(JSON.parse(process.argv[2] ?? '{}') as ToolServerOptions);
  process.stdout.write(`tool server listening on ${server.url}\n`);
  process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
}
