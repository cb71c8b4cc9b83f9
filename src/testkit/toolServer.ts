// The fake external tool: an HTTP server with idempotency keys, a lookup and faults on command (a real process in drills).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Faults the drill tool can inject, one per delivery of a key, in the order they were set:
 * - drop_after_commit: the effect happens, then the connection is reset before any answer.
 * - timeout_before_commit: nothing happens; the request hangs until the caller gives up.
 * - error_after_commit: the effect happens, then the answer is a 503.
 * - error_before_commit: nothing happens; the answer is a 500.
 * - deliver_twice: the request reaches the tool twice (a redelivering proxy).
 * - hold_after_commit: the effect happens and the answer is held until released (or the caller dies).
 * - hold_before_commit: the request is held until released, then dropped; nothing ever happens. Its
 *   lookup says absent meanwhile, and stays right: a request the tool reported absent never commits.
 * - reject: nothing happens; the answer is a 422 (the tool refuses the call for good).
 * - lookup_unavailable: the next lookup of the key answers 503.
 */
const TOOL_FAULTS = [
  'drop_after_commit',
  'timeout_before_commit',
  'error_after_commit',
  'error_before_commit',
  'deliver_twice',
  'hold_after_commit',
  'hold_before_commit',
  'reject',
  'lookup_unavailable',
] as const;

export type ToolFault = (typeof TOOL_FAULTS)[number];

/** One effect the tool performed: the world changed once per entry. */
export interface ToolEffect {
  id: string;
  key: string;
  params: unknown;
  seq: number;
  /** What the call cost, when its parameters named one (a metered tool reports it). */
  cost?: number;
}

export interface ToolServerOptions {
  /** (Default: 0, a free port) */
  port?: number;
  /** Honour `Idempotency-Key`: a repeated key returns its first effect and does nothing new. (Default: false) */
  idempotent?: boolean;
  /** How long `timeout_before_commit` hangs before dropping the connection. (Default: 30s) */
  hangMs?: number;
}

interface ToolServer {
  url: string;
  close(): Promise<void>;
}

const HANG_MS_DEFAULT = 30_000;
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * An HTTP tool for drills, tests and the demo, with an effect ledger and fault modes.
 * `POST /effects` (key in `Idempotency-Key`, params as JSON) performs an effect;
 * `GET /effects/<key>` looks it up (200 or 404). Control: `POST /_control/faults {key, faults}`,
 * `GET /_control/ledger`, `GET /_control/held` (keys of held requests), `POST /_control/release {key}`.
 * Unless `idempotent`, it does not dedupe: every delivery that commits is a new effect, so a
 * duplicate call shows up as a duplicate effect.
 */
export async function startToolServer(options: ToolServerOptions = {}): Promise<ToolServer> {
  const effects: ToolEffect[] = [];
  const byKey = new Map<string, ToolEffect>();
  const executeFaults = new Map<string, ToolFault[]>();
  const lookupFaults = new Map<string, ToolFault[]>();
  const held = new Map<string, () => void>();
  const hangMs = options.hangMs ?? HANG_MS_DEFAULT;

  const commit = (key: string, params: unknown): ToolEffect => {
    const existing = byKey.get(key);
    if (options.idempotent && existing) return existing;
    // A call whose parameters name a numeric `cost` reports it back, as a metered tool would.
    const cost = (params as { cost?: unknown } | null)?.cost;
    const effect: ToolEffect = {
      id: `fx-${effects.length + 1}`,
      key,
      params,
      seq: effects.length + 1,
      ...(typeof cost === 'number' && { cost }),
    };
    effects.push(effect);
    if (!existing) byKey.set(key, effect);
    return effect;
  };
  const nextFault = (queues: Map<string, ToolFault[]>, key: string) => queues.get(key)?.shift();
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const server = http.createServer((req, res) => {
    readBody(req)
      .then((text) => {
        const url = new URL(req.url ?? '/', 'http://tool');
        if (req.method === 'POST' && url.pathname === '/effects') {
          const key = req.headers['idempotency-key'];
          if (typeof key !== 'string' || !key) return json(res, 400, { error: 'Idempotency-Key header required' });
          const params = text ? JSON.parse(text) : null;
          switch (nextFault(executeFaults, key)) {
            case 'drop_after_commit':
              commit(key, params);
              return void req.socket.destroy();
            case 'timeout_before_commit':
              return void setTimeout(() => req.socket.destroy(), hangMs).unref();
            case 'error_after_commit':
              commit(key, params);
              return json(res, 503, { error: 'unavailable' });
            case 'error_before_commit':
              return json(res, 500, { error: 'internal error' });
            case 'reject':
              return json(res, 422, { error: 'invalid recipient' });
            case 'deliver_twice': {
              const first = commit(key, params);
              commit(key, params);
              return json(res, 201, first);
            }
            case 'hold_after_commit': {
              const effect = commit(key, params);
              held.set(key, () => json(res, 201, effect));
              return void req.socket.once('close', () => held.delete(key));
            }
            case 'hold_before_commit':
              held.set(key, () => req.socket.destroy());
              return void req.socket.once('close', () => held.delete(key));
            default: {
              const existed = byKey.has(key);
              const effect = commit(key, params);
              return json(res, options.idempotent && existed ? 200 : 201, effect);
            }
          }
        }
        if (req.method === 'GET' && url.pathname.startsWith('/effects/')) {
          const key = decodeURIComponent(url.pathname.slice('/effects/'.length));
          if (nextFault(lookupFaults, key) === 'lookup_unavailable') return json(res, 503, { error: 'lookup unavailable' });
          const effect = byKey.get(key);
          return effect ? json(res, 200, effect) : json(res, 404, { key, found: false });
        }
        if (req.method === 'POST' && url.pathname === '/_control/faults') {
          const { key, faults } = JSON.parse(text) as { key: string; faults: ToolFault[] };
          for (const fault of faults) {
            const queues = fault === 'lookup_unavailable' ? lookupFaults : executeFaults;
            queues.set(key, [...(queues.get(key) ?? []), fault]);
          }
          return json(res, 200, { key, faults });
        }
        if (req.method === 'GET' && url.pathname === '/_control/ledger') return json(res, 200, { effects });
        if (req.method === 'GET' && url.pathname === '/_control/held') return json(res, 200, { keys: [...held.keys()] });
        if (req.method === 'POST' && url.pathname === '/_control/release') {
          const { key } = JSON.parse(text) as { key: string };
          const release = held.get(key);
          held.delete(key);
          release?.();
          return json(res, 200, { released: Boolean(release) });
        }
        return json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
      })
      .catch((error: Error) => {
        if (!res.headersSent) json(res, 400, { error: error.message });
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error('body too large'));
      else chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}
