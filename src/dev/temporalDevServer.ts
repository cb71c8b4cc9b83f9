import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SERVER_READY_TIMEOUT_MS_DEFAULT } from '../config.js';
import { silentLog, type Log } from '../log.js';
import { BATON_SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { freePort } from './freePort.js';
import { waitFor } from './waitFor.js';

interface TemporalDevServerOptions {
  /** The `temporal` binary (see `resolveTemporalCli`). */
  cliPath: string;
  /** SQLite file for the server's state; without it, state is lost when the server stops. */
  dbFilename?: string;
  /** gRPC port. (Default: a free port) */
  port?: number;
  /** Web UI port; ignored when `headless`. (Default: a free port) */
  uiPort?: number;
  /** Run without the Web UI. (Default: false) */
  headless?: boolean;
  /** Namespace to create at start. (Default: `default`) */
  namespace?: string;
  /** How long to wait for the frontend to answer. (Default: 60s) */
  readyTimeoutMs?: number;
  log?: Log;
}

export interface TemporalDevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  /** The server's own version, as reported by the frontend. */
  serverVersion: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts of one server a port taken under it may cost: the dev server picks its HTTP API and
 * metrics ports itself, and on a busy machine another process can take one between its pick and
 * its bind (and a port given to it may still be held by a process on its way out).
 */
const PORT_TAKEN_ATTEMPTS = 3;
const PORT_TAKEN = /bind: address already in use/;

/**
 * Starts `temporal server start-dev` and waits until its frontend answers; starts it again when it
 * stops at once because a port was taken (at most PORT_TAKEN_ATTEMPTS starts).
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (attempt >= PORT_TAKEN_ATTEMPTS || !message.startsWith(EXITED_EARLY) || !PORT_TAKEN.test(message)) throw error;
      const taken = /listen tcp ([\d.:]+): bind: address already in use/.exec(message)?.[1] ?? 'a port';
      (options.log ?? silentLog)(
        `The Temporal dev server stopped at start: ${taken} was taken. Starting it again (start ${attempt + 1} of ${PORT_TAKEN_ATTEMPTS}) ...`,
      );
    }
  }
}

const EXITED_EARLY = 'temporal server start-dev exited early';

/**
 * Settings of the dev server's dynamic config: one partition per task queue (one machine needs no
 * more), fairness on, and timers that fire within 100 ms of their time. Temporal's default timer
 * shift (1 s) fires no timer sooner than a second after it is set: a heartbeat timeout re-armed by
 * the last heartbeat and the retry after it each waited up to a second more, so a killed owner of a
 * task with a 2 s heartbeat timeout was claimed again after 1.7 timeouts and a frozen one after 2.5.
 */
export const DEV_DYNAMIC_CONFIG = [
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
  'matching.enableFairness=true',
  'history.timerProcessorMaxTimeShift="100ms"',
];

async function startOnce(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const log = options.log ?? silentLog;
  const namespace = options.namespace ?? 'default';
  const port = options.port ?? (await freePort());
  const uiPort = options.headless ? undefined : (options.uiPort ?? (await freePort()));
  const address = `127.0.0.1:${port}`;
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--namespace', namespace, '--log-level', 'warn'];
  if (uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  // baton's workflows set these (src/temporal/searchAttributes.ts): registered from the start.
  for (const attribute of BATON_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${attribute.name}=Keyword`);
  // One partition per task queue, so a backlog is served in priority order and in turn between
  // graphs across the whole queue (src/temporal/priority.ts), not within each of four partitions.
  for (const setting of DEV_DYNAMIC_CONFIG) args.push('--dynamic-config-value', setting);

  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new OutputKeeper();
  child.stdout?.on('data', (chunk: Buffer) => output.add(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.add(chunk.toString()));
  let exited: Error | undefined;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = new Error(`${EXITED_EARLY} (code ${code}, signal ${signal}):\n${output.text()}`);
      resolve();
    });
  });

  log(`Starting Temporal dev server on ${address}${options.dbFilename ? ` (state in ${options.dbFilename})` : ''} ...`);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exitedPromise;
    clearTimeout(timer);
  };
  try {
    const serverVersion = await waitFor(
      `Temporal dev server at ${address}`,
      async () => {
        const connection = await Connection.connect({ address, connectTimeout: 2_000 });
        try {
          await connection.workflowService.describeNamespace({ namespace });
          const info = await connection.workflowService.getClusterInfo({});
          return info.serverVersion ?? 'unknown';
        } finally {
          await connection.close();
        }
      },
      { timeoutMs: options.readyTimeoutMs ?? SERVER_READY_TIMEOUT_MS_DEFAULT, intervalMs: 500, abort: () => exited },
    );
    // What answered may be another server on the port this one failed to bind.
    if (exited) throw exited;
    return {
      address,
      namespace,
      uiUrl: uiPort === undefined ? undefined : `http://127.0.0.1:${uiPort}`,
      serverVersion,
      process: child,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * What a server printed, for the error when it stops: its start and its end (a Go panic prints its
 * cause first and then a long stack, so the end alone loses the cause).
 */
class OutputKeeper {
  private static readonly KEEP = 4_000;
  private head = '';
  private tail = '';
  private dropped = false;

  add(chunk: string): void {
    if (this.head.length < OutputKeeper.KEEP) {
      const room = OutputKeeper.KEEP - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    const tail = this.tail + chunk;
    if (tail.length > OutputKeeper.KEEP) this.dropped = true;
    this.tail = tail.slice(-OutputKeeper.KEEP);
  }

  text(): string {
    return (this.dropped ? `${this.head}\n[...]\n${this.tail}` : this.head + this.tail).trim();
  }
}
