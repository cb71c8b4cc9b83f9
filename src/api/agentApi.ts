// The agent API (SPEC U3, U7): every operation of src/api/operations.ts performed for a bearer
// token, over HTTP (`POST /v1/<operation>`, JSON in and out, errors as problem details) and over
// MCP (Streamable HTTP at `/mcp`, stateless, one tool per operation), with the OpenAPI document at
// `/openapi.json`. The same handler serves `baton serve` and each run's own endpoint; a run's
// endpoint also carries the run (`LocalRun`), which performs its tool calls and takes its progress.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { Queryable } from '../db/queryable.js';
import { BatonError, errorResponse, InvalidInputError, NotFoundError } from '../errors.js';
import type { ToolCallInput, ToolCallResult } from '../tools/types.js';
import { callAgentStore, secretSha256 } from './agentStore.js';
import { ForbiddenError, MethodNotAllowedError, RateLimitedError, RequestTooLargeError, UnauthenticatedError } from './errors.js';
import { describeInputProblems, isOperationName, OPERATIONS, type OperationName } from './operations.js';

/** Largest request body read: a shared object's largest content, JSON-escaped, with room to spare. */
export const MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024;
/** Calls per second one token may make on average, and in a burst. */
export const RATE_LIMIT_DEFAULT = { perSecond: 50, burst: 200 };
/** How often a waiting `pool.claim` looks for work. */
const POOL_CLAIM_POLL_MS = 500;
/** Prefix of every secret baton issues, so secret scanners and people can tell what it is. */
const TOKEN_SECRET_PREFIX = 'baton_';

/** A new token secret: 256 random bits. */
export function newTokenSecret(): string {
  return `${TOKEN_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The run a run's own endpoint serves: its claim, its tool calls, its agent's progress. */
export interface LocalRun {
  taskId: string;
  claimVersion: number;
  /** Tool calls through the worker's gateway, fenced on this claim. Absent: the worker has no tools. */
  callTool?(call: ToolCallInput): Promise<ToolCallResult>;
  /** Progress the agent reported; the runner adds it to its own heartbeats. */
  reportProgress(progress: Record<string, unknown>): void;
}

export interface AgentApiOptions {
  db: Queryable;
  localRun?: LocalRun;
  /** (Default: 4 MiB) */
  maxBodyBytes?: number;
  /** Per token; each client address may make four times as many. (Default: 50 calls/s, bursts of 200) */
  rateLimit?: { perSecond: number; burst: number };
}

export interface AgentApi {
  /** Validates `input` and performs `operation` with the token `secret`. */
  perform(secret: string, operation: string, input: unknown, signal?: AbortSignal): Promise<unknown>;
  /** Answers one HTTP request: /v1/<operation>, /mcp, /openapi.json, /healthz. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void;
}

export function createAgentApi(options: AgentApiOptions): AgentApi {
  const { db, localRun } = options;
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT;
  const rate = options.rateLimit ?? RATE_LIMIT_DEFAULT;
  const limiter = rateLimiter(rate);
  // Per address as well, at four times a token's rate: made-up tokens (each a bucket of its own, each
  // refusal an event) cannot flood the store from one place.
  const addressLimiter = rateLimiter({ perSecond: rate.perSecond * 4, burst: rate.burst * 4 });

  async function perform(secret: string, operation: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
    if (!isOperationName(operation)) {
      throw new NotFoundError(`no operation ${JSON.stringify(operation)}; the operations are ${Object.keys(OPERATIONS).join(', ')}`);
    }
    const parsed = OPERATIONS[operation].input.safeParse(input ?? {});
    if (!parsed.success) throw new InvalidInputError(`${operation}: ${describeInputProblems(parsed.error)}`);
    const args = parsed.data as Record<string, unknown>;
    limiter.take(secretSha256(secret));
    switch (operation) {
      case 'tool.call':
        return callTool(secret, args as unknown as ToolCallInput);
      case 'heartbeat': {
        const beat = (await callAgentStore(db, secret, operation, args)) as { taskId: string; pooled: boolean; claimVersion: number };
        const thisRun = localRun && beat.taskId === localRun.taskId && beat.claimVersion === localRun.claimVersion;
        if (thisRun && !beat.pooled && args.progress) localRun.reportProgress(args.progress as Record<string, unknown>);
        return beat;
      }
      case 'pool.claim':
        return claimFromPool(secret, args as { pool: string; waitSeconds?: number }, signal);
      default:
        return callAgentStore(db, secret, operation, args);
    }
  }

  async function callTool(secret: string, call: ToolCallInput): Promise<ToolCallResult> {
    const run = (await callAgentStore(db, secret, 'tool.call', {})) as { taskId: string; claimVersion: number };
    if (!localRun) throw new InvalidInputError('tool calls are made on the worker that runs the claim: use the endpoint your run gives you ($BATON_URL inside a run); a pooled run has none');
    if (run.taskId !== localRun.taskId || run.claimVersion !== localRun.claimVersion) {
      throw new ForbiddenError('other_run', `this endpoint serves claim version ${localRun.claimVersion} of task ${localRun.taskId} only`);
    }
    if (!localRun.callTool) throw new InvalidInputError("this run's worker has no tools configured");
    return localRun.callTool({ tool: call.tool, step: call.step, params: call.params ?? null });
  }

  async function claimFromPool(secret: string, args: { pool: string; waitSeconds?: number }, signal?: AbortSignal): Promise<unknown> {
    const deadline = Date.now() + (args.waitSeconds ?? 0) * 1000;
    for (;;) {
      // A caller that has gone away must not be handed a run nobody would receive.
      if (signal?.aborted) return null;
      // A fresh secret per attempt: only the one handed out is ever stored, as its hash.
      const runToken = newTokenSecret();
      const claimed = await callAgentStore(db, secret, 'pool.claim', { pool: args.pool, runSecretSha256: secretSha256(runToken) });
      if (claimed) return { ...(claimed as object), runToken };
      if (Date.now() >= deadline || signal?.aborted) return null;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POOL_CLAIM_POLL_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    try {
      route(req, res);
    } catch (error) {
      // Nothing a request holds may take the process down (a run's endpoint lives in the worker).
      req.resume();
      sendProblem(res, error);
    }
  }

  function route(req: http.IncomingMessage, res: http.ServerResponse): void {
    // Only the path is read, and without URL parsing, which throws on some request targets.
    const url = { pathname: (req.url ?? '/').split('?')[0]! };
    const answer = (status: number, body: unknown, contentType = 'application/json') => {
      if (!res.headersSent) res.writeHead(status, { 'content-type': contentType }).end(JSON.stringify(body));
    };
    const fail = (error: unknown) => sendProblem(res, error);
    if (req.method === 'GET' && url.pathname === '/healthz') return answer(200, { ok: true });
    if (req.method === 'GET' && url.pathname === '/openapi.json') return answer(200, (openApi ??= openApiDocument()));
    const isMcp = url.pathname === '/mcp';
    const operation = url.pathname.startsWith('/v1/') ? url.pathname.slice('/v1/'.length) : undefined;
    if (!isMcp && operation === undefined) {
      req.resume();
      return fail(new NotFoundError(`no route ${req.method} ${url.pathname}: POST /v1/<operation>, POST /mcp, GET /openapi.json`));
    }
    if (req.method !== 'POST') {
      req.resume();
      res.setHeader('allow', 'POST');
      return fail(new MethodNotAllowedError(`${req.method} ${url.pathname}: use POST${isMcp ? ' (this MCP endpoint is stateless: no SSE stream, no sessions)' : ''}`));
    }
    try {
      addressLimiter.take(req.socket.remoteAddress ?? 'local');
    } catch (error) {
      req.resume();
      return fail(error);
    }
    const secret = bearerSecret(req);
    if (secret === undefined) {
      req.resume();
      return fail(new UnauthenticatedError('missing', 'an Authorization: Bearer <token> header is required (a token from `baton token create`, or $BATON_TOKEN inside a run)'));
    }
    const closed = new AbortController();
    res.once('close', () => closed.abort());
    readJsonBody(req, maxBodyBytes)
      .then(async (body) => {
        if (isMcp) return serveMcp(req, res, body, (name, input) => perform(secret, name, input, closed.signal));
        answer(200, await perform(secret, operation!, body, closed.signal));
      })
      .catch(fail);
  }

  return { perform, handle };
}

/** RFC 9457 problem details: a stable `code`, a specific `detail`, and what the caller needs to act. */
export function problemOf(error: unknown): { type: string; title: string; status: number; code: string; detail: string; [extra: string]: unknown } {
  // A problem that came from another endpoint (`baton mcp` relaying a run's) is passed on as it came.
  const relayed = (error as { problem?: ReturnType<typeof problemOf> } | null)?.problem;
  if (relayed && typeof relayed.code === 'string') return relayed;
  if (!(error instanceof BatonError)) {
    const detail = 'the server failed; nothing was done that you need to repeat differently (see its log)';
    return { type: 'urn:baton:error:internal', title: error instanceof Error ? error.name : 'Error', status: 500, code: 'internal', detail };
  }
  const { httpStatus } = errorResponse(error);
  return { type: `urn:baton:error:${error.code}`, title: error.name, status: httpStatus, code: error.code, detail: error.message, ...error.details };
}

/** Answers with `error`'s problem details, unless an answer has begun; 401 and 429 with the headers they call for. */
function sendProblem(res: http.ServerResponse, error: unknown): void {
  if (res.headersSent) return;
  const problem = problemOf(error);
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (problem.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
  if (typeof problem.retryAfterMs === 'number') headers['retry-after'] = String(Math.ceil(problem.retryAfterMs / 1000));
  res.writeHead(problem.status, headers).end(JSON.stringify(problem));
}

function bearerSecret(req: http.IncomingMessage): string | undefined {
  const match = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

function readJsonBody(req: http.IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    if (Number(req.headers['content-length'] ?? 0) > limit) {
      req.resume();
      return reject(new RequestTooLargeError(limit));
    }
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new RequestTooLargeError(limit));
      } else chunks.push(chunk);
    });
    req.once('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text.trim()) return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch (error) {
        reject(new InvalidInputError(`the body is not JSON: ${(error as Error).message}`));
      }
    });
    req.once('error', reject);
  });
}

/** Token buckets per token hash; a bucket idle long enough to be full is forgotten. */
function rateLimiter(limit: { perSecond: number; burst: number }) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key: string): void {
      const now = Date.now();
      if (buckets.size > 10_000) {
        for (const [k, b] of buckets) if (b.tokens + ((now - b.at) / 1000) * limit.perSecond >= limit.burst) buckets.delete(k);
      }
      const bucket = buckets.get(key) ?? { tokens: limit.burst, at: now };
      bucket.tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * limit.perSecond);
      bucket.at = now;
      buckets.set(key, bucket);
      if (bucket.tokens < 1) throw new RateLimitedError(((1 - bucket.tokens) / limit.perSecond) * 1000);
      bucket.tokens -= 1;
    },
  };
}

/** MCP tool names: the operation's, with `_` for `.` (some clients allow only [A-Za-z0-9_-]). */
export function mcpToolName(operation: OperationName): string {
  return operation.replaceAll('.', '_');
}

/** Answers one MCP request (stateless Streamable HTTP, JSON responses) with a server of its own. */
async function serveMcp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: unknown,
  perform: (operation: OperationName, input: unknown) => Promise<unknown>,
): Promise<void> {
  const server = createMcpServer(perform);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** An MCP server whose tools are the agent API's operations, each performed by `perform`. */
export function createMcpServer(perform: (operation: OperationName, input: unknown) => Promise<unknown>): McpServer {
  const server = new McpServer({ name: 'baton', version: '0.1.0' });
  for (const [name, operation] of Object.entries(OPERATIONS) as [OperationName, (typeof OPERATIONS)[OperationName]][]) {
    server.registerTool(mcpToolName(name), { description: `${operation.description} (scope: ${operation.scope})`, inputSchema: operation.input as z.ZodObject }, async (input: unknown) => {
      try {
        const result = await perform(name, input);
        return { content: [{ type: 'text' as const, text: JSON.stringify(result) }] };
      } catch (error) {
        return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(problemOf(error)) }] };
      }
    });
  }
  return server;
}

/** The OpenAPI document, made on its first request: it depends on nothing but the operation table. */
let openApi: Record<string, unknown> | undefined;

/** The OpenAPI 3.1 document of the HTTP API, from the same schemas. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [name, operation] of Object.entries(OPERATIONS)) {
    paths[`/v1/${name}`] = {
      post: {
        operationId: mcpToolName(name as OperationName),
        summary: operation.description,
        description: `Needs ${operation.scope === 'run' ? 'a run token' : `a token with scope ${operation.scope} (or admin)`}. The actor is the token's identity.`,
        security: [{ bearer: [] }],
        requestBody: { required: false, content: { 'application/json': { schema: z.toJSONSchema(operation.input, { io: 'input', unrepresentable: 'any' }) } } },
        responses: {
          '200': { description: 'done', content: { 'application/json': {} } },
          default: { description: 'refused or failed', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'baton agent API', version: '1', description: 'docs/agents.md. Every call is made as the identity of its bearer token.' },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'code', 'detail'],
          properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, code: { type: 'string' }, detail: { type: 'string' } },
        },
      },
    },
  };
}
