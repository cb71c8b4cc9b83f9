import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorResponse, InvalidInputError } from '../errors.js';
import type { ToolCallInput, ToolCallResult } from './types.js';

/** Environment variable carrying the endpoint's URL to the agent. */
export const TOOL_URL_ENV = 'BATON_TOOL_URL';
/** Environment variable carrying the endpoint's per-run bearer token to the agent. */
export const TOOL_TOKEN_ENV = 'BATON_TOOL_TOKEN';
/** Largest request body the endpoint reads. */
const MAX_REQUEST_BYTES = 128 * 1024;

export interface ToolEndpoint {
  /** `http://127.0.0.1:<port>/call` */
  url: string;
  token: string;
  /** The variables that give an agent this endpoint, and nothing else. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * S2, X1: a local endpoint through which one run's agent makes gateway calls. It listens on
 * 127.0.0.1 on a free port, accepts only the run's random bearer token, and binds every call to
 * the run's claim through `callTool`: the agent names a tool, a step and parameters, never a task,
 * an owner or a claim version, so it cannot act for another task, and a stale claim is refused
 * by the fence like any other owner write. `POST /call {tool, step, params}`.
 */
export async function startToolEndpoint(callTool: (call: ToolCallInput) => Promise<ToolCallResult>): Promise<ToolEndpoint> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  const server = http.createServer((req, res) => {
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/call`;
  return {
    url,
    token,
    env: { [TOOL_URL_ENV]: url, [TOOL_TOKEN_ENV]: token },
    close: () =>
      new Promise<void>((resolve) => {
        // The run is over: a call still open (an agent left behind) is cut, not answered later.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
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
