import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, chown, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorResponse, InvalidInputError } from '../errors.js';
import type { ToolCallInput, ToolCallResult } from './types.js';

/** Environment variable carrying the endpoint's URL to the agent. */
export const TOOL_URL_ENV = 'BATON_TOOL_URL';
/** Environment variable carrying the endpoint's per-run bearer token to the agent. */
export const TOOL_TOKEN_ENV = 'BATON_TOOL_TOKEN';
/** Environment variable naming the Unix socket the endpoint listens on, when it does (isolated agents). */
export const TOOL_SOCKET_ENV = 'BATON_TOOL_SOCKET';
/** The URL an agent uses with the socket: the host part is never resolved. */
const SOCKET_URL = 'http://baton-tool-endpoint/call';
/** Largest request body the endpoint reads. */
const MAX_REQUEST_BYTES = 128 * 1024;

export interface ToolEndpointOptions {
  /**
   * Listen on this Unix socket instead of a TCP port on 127.0.0.1: an isolated agent reaches it
   * through its own folder (a sandbox with no network still can), and no other user can connect.
   * (Default: TCP)
   */
  socketPath?: string;
  /** The agent's user, who alone may connect to the socket (mode 0600). (Default: the worker's) */
  owner?: { uid: number; gid: number };
}

export interface ToolEndpoint {
  /** `http://127.0.0.1:<port>/call`, or a fixed URL to use with `socketPath`. */
  url: string;
  socketPath?: string;
  token: string;
  /** The variables that give an agent this endpoint, and nothing else. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * S2, X1: a local endpoint through which one run's agent makes gateway calls. It listens on
 * 127.0.0.1 on a free port (or on `socketPath`), accepts only the run's random bearer token, and
 * binds every call to the run's claim through `callTool`: the agent names a tool, a step and
 * parameters, never a task, an owner or a claim version, so it cannot act for another task, and
 * a stale claim is refused by the fence like any other owner write. `POST /call {tool, step, params}`.
 */
export async function startToolEndpoint(
  callTool: (call: ToolCallInput) => Promise<ToolCallResult>,
  options: ToolEndpointOptions = {},
): Promise<ToolEndpoint> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  // The host is never used (the socket URL's is made up), so a request without one is answered like any other.
  const server = http.createServer({ requireHostHeader: false }, (req, res) => {
    const reply = (status: number, body: unknown) => {
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const given = Buffer.from(req.headers.authorization ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      reply(401, { error: { name: 'Unauthorized', message: `a valid per-run token is required (${TOOL_TOKEN_ENV})` } });
      req.resume();
      return;
    }
    if (req.method !== 'POST' || req.url !== '/call') {
      reply(404, { error: { name: 'NotFound', message: 'POST /call {tool, step, params}' } });
      req.resume();
      return;
    }
    readJson(req)
      .then((body) => callTool(parseCall(body)))
      .then((result) => reply(200, result))
      .catch((error: Error & { code?: unknown }) => {
        // The status and the code come from the error's class (src/errors.ts); the CLI maps the code back.
        const code = typeof error.code === 'string' ? error.code : undefined;
        reply(errorResponse(error).httpStatus, { error: { name: error.name, code, message: error.message } });
      });
  });
  // Bytes Node cannot read as an HTTP request never reach the handler above; they are answered in
  // JSON too (Node's own answer has no body), unless a response has already begun on the connection.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex & { bytesWritten?: number }) => {
    if (!socket.writable || socket.bytesWritten) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body = JSON.stringify({ error: { name: 'BadRequest', message: `not an HTTP request the endpoint can read: ${error.message}` } });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  const { socketPath, owner } = options;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (socketPath) server.listen(socketPath, () => resolve());
    else server.listen(0, '127.0.0.1', () => resolve());
  });
  if (socketPath) {
    await chmod(socketPath, 0o600);
    if (owner) await chown(socketPath, owner.uid, owner.gid);
  }
  const url = socketPath ? SOCKET_URL : `http://127.0.0.1:${(server.address() as AddressInfo).port}/call`;
  return {
    url,
    token,
    ...(socketPath ? { socketPath } : {}),
    env: { [TOOL_URL_ENV]: url, [TOOL_TOKEN_ENV]: token, ...(socketPath ? { [TOOL_SOCKET_ENV]: socketPath } : {}) },
    close: async () => {
      await new Promise<void>((resolve) => {
        // The run is over: a call still open (an agent left behind) is cut, not answered later.
        server.closeAllConnections();
        server.close(() => resolve());
      });
      if (socketPath) await rm(socketPath, { force: true });
    },
  };
}

function parseCall(body: unknown): ToolCallInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInputError('the body must be {tool, step, params}');
  const { tool, step, params, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest);
  // Identity and claim are the runner's to bind; a request that tries to name them is refused.
  if (extra.length) throw new InvalidInputError(`unexpected field(s) ${extra.join(', ')}: a call names only tool, step and params`);
  if (typeof tool !== 'string' || !tool) throw new InvalidInputError('tool must be a non-empty string');
  if (typeof step !== 'string' || !step) throw new InvalidInputError('step must be a non-empty string');
  return { tool, step, params: (params ?? null) as ToolCallInput['params'] };
}

function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new InvalidInputError(`request larger than ${MAX_REQUEST_BYTES} bytes`));
        req.resume();
      } else {
        chunks.push(chunk);
      }
    });
    req.once('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(new InvalidInputError(`the body is not JSON: ${(error as Error).message}`));
      }
    });
    req.once('error', reject);
  });
}
