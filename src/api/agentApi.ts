// The agent API (SPEC U3, U7): every operation of src/api/operations.ts performed for a bearer
// token, over HTTP (`POST /v1/<operation>`, JSON in and out, errors as problem details) and over
// MCP (Streamable HTTP at `/mcp`, stateless, one tool per operation), with the OpenAPI document at
// `/openapi.json`. The same handler serves `baton serve` and each run's own endpoint; a run's
// endpoint also carries the run (`LocalRun`), which performs its tool calls and takes its progress.
import type http from 'node:http';
import type { Queryable } from '../db/queryable.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { stderrLog, type Log } from '../log.js';
import type { ToolCallInput, ToolCallResult } from '../tools/types.js';
import { serveMcp } from './agentMcp.js';
import { agentAuthenticate, agentCall, agentRefusalsSummarise } from './agentDoor.js';
import { ForbiddenError, MethodNotAllowedError, RequestTooLargeError, UnauthenticatedError } from './errors.js';
import { openApiDocument } from './openApi.js';
import { isOperationName, OPERATIONS, parseOperationInput, type OperationName } from './operations.js';
import { answerProblem, newRequestId, REQUEST_ID_HEADER, sendProblem } from './problems.js';
import { rateLimiter, type RateLimit } from './rateLimiter.js';
import { createTokenGate } from './tokenGate.js';
import { newTokenSecret, secretSha256 } from './tokenSecret.js';

export { problemOf } from './problems.js';

/** Largest request body read: a shared object's largest content, JSON-escaped, with room to spare. */
export const MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024;
/** Calls per second one token may make on average, and in a burst. */
export const RATE_LIMIT_DEFAULT: RateLimit = { perSecond: 50, burst: 200 };
/** How often a waiting `pool.claim` looks for work. */
const POOL_CLAIM_POLL_MS = 500;

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
  rateLimit?: RateLimit;
  /** Refused tokens one client address (an IPv6 one by its /64) may present before its unknown tokens wait (429). (Default: 1/s, bursts of 30) */
  refusedTokenLimit?: RateLimit;
  /** Refused tokens all addresses together may present before unknown tokens wait (429). (Default: 10/s, bursts of 300) */
  refusedTokenLimitAll?: RateLimit;
  /** How long made-up tokens' refusals are counted before one event per address records them. (Default: 60 s) */
  refusalSummaryMs?: number;
  /** Where failures (5xx) are logged, with their request id and stack. (Default: stderr) */
  log?: Log;
}

/** Who is calling: the bearer's secret, from where, and whether the store checked that token during this request. */
interface Caller {
  secret: string;
  address: string;
  checked: boolean;
  signal?: AbortSignal;
}

export interface AgentApi {
  /** Checks the token, validates `input` and performs `operation` with the token `secret`, as a call from `address`. */
  perform(secret: string, operation: string, input: unknown, options?: { signal?: AbortSignal; address?: string }): Promise<unknown>;
  /** Answers one HTTP request: /v1/<operation>, /mcp, /openapi.json, /healthz. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void;
}

export function createAgentApi(options: AgentApiOptions): AgentApi & { close(): Promise<void> } {
  const { db, localRun } = options;
  const log = options.log ?? stderrLog;
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT;
  const rate = options.rateLimit ?? RATE_LIMIT_DEFAULT;
  const limiter = rateLimiter(rate, 'calls with this token');
  // Per address as well, at four times a token's rate: one place cannot take the whole server.
  const addressLimiter = rateLimiter({ perSecond: rate.perSecond * 4, burst: rate.burst * 4 }, 'calls from this address');
  const gate = createTokenGate({
    refusedTokenLimit: options.refusedTokenLimit,
    refusedTokenLimitAll: options.refusedTokenLimitAll,
    summaryMs: options.refusalSummaryMs,
    summarise: (address, count, throttled, windowMs) => agentRefusalsSummarise(db, address, count, throttled, windowMs),
    log,
  });

  /** The token first: asked of the store unless known here (or, with `recheck`, unless asked during this request). */
  async function checkToken(caller: Caller, operation: string | undefined, recheck = false): Promise<void> {
    if (recheck && caller.checked) return;
    await gate.check(caller.address, secretSha256(caller.secret), async () => {
      caller.checked = true;
      await agentAuthenticate(db, caller.secret, operation !== undefined && isOperationName(operation) ? operation : undefined);
    }, recheck);
  }

  async function perform(secret: string, operation: string, input: unknown, opts: { signal?: AbortSignal; address?: string } = {}): Promise<unknown> {
    const caller: Caller = { secret, address: opts.address ?? 'local', checked: false, signal: opts.signal };
    await checkToken(caller, operation);
    return act(caller, operation, input);
  }

  /** Performs `operation` for a caller whose token passed the gate; input it refuses is refused only once the token is checked. */
  async function act(caller: Caller, operation: string, input: unknown): Promise<unknown> {
    limiter.take(secretSha256(caller.secret));
    let args: Record<string, unknown>;
    try {
      if (!isOperationName(operation)) {
        throw new NotFoundError(`no operation ${JSON.stringify(operation)}; the operations are ${Object.keys(OPERATIONS).join(', ')}`);
      }
      args = parseOperationInput(operation, input);
    } catch (error) {
      await checkToken(caller, operation, true);
      throw error;
    }
    try {
      return await performChecked(caller, operation as OperationName, args);
    } catch (error) {
      // Revoked or expired since it was accepted: the next call is checked before its body is read.
      if (error instanceof UnauthenticatedError) gate.forget(secretSha256(caller.secret));
      throw error;
    }
  }

  async function performChecked(caller: Caller, operation: OperationName, args: Record<string, unknown>): Promise<unknown> {
    const { secret, signal } = caller;
    switch (operation) {
      case 'tool.call':
        return callTool(secret, args as unknown as ToolCallInput);
      case 'heartbeat': {
        const beat = (await agentCall(db, secret, 'heartbeat', args)) as { taskId: string; pooled: boolean; claimVersion: number };
        const thisRun = localRun && beat.taskId === localRun.taskId && beat.claimVersion === localRun.claimVersion;
        if (thisRun && !beat.pooled && args.progress) localRun.reportProgress(args.progress as Record<string, unknown>);
        return beat;
      }
      case 'pool.claim':
        return claimFromPool(secret, args as { pool: string; waitSeconds?: number }, signal);
      default:
        return agentCall(db, secret, operation, args);
    }
  }

  async function callTool(secret: string, call: ToolCallInput): Promise<ToolCallResult> {
    const run = (await agentCall(db, secret, 'tool.call', {})) as { taskId: string; claimVersion: number };
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
      const claimed = await agentCall(db, secret, 'pool.claim', { pool: args.pool, runSecretSha256: secretSha256(runToken) });
      if (claimed) return { ...(claimed as object), runToken };
      if (Date.now() >= deadline || signal?.aborted) return null;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POOL_CLAIM_POLL_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const requestId = newRequestId();
    res.setHeader(REQUEST_ID_HEADER, requestId);
    // Only the path is read, and without URL parsing, which throws on some request targets.
    const path = (req.url ?? '/').split('?')[0]!;
    const fail = (error: unknown) => {
      // Whatever of the body is still coming is read and dropped, so the answer reaches the caller.
      req.resume();
      sendProblem(res, answerProblem(log, requestId, `${req.method} ${path}`, error));
    };
    // Nothing a request holds may take the process down (a run's endpoint lives in the worker).
    route(req, res, path, requestId).catch(fail);
  }

  async function route(req: http.IncomingMessage, res: http.ServerResponse, path: string, requestId: string): Promise<void> {
    const answer = (status: number, body: unknown) => {
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.method === 'GET' && path === '/healthz') return answer(200, { ok: true });
    if (req.method === 'GET' && path === '/openapi.json') return answer(200, openApiDocument());
    const isMcp = path === '/mcp';
    const operation = path.startsWith('/v1/') ? path.slice('/v1/'.length) : undefined;
    if (!isMcp && operation === undefined) throw new NotFoundError(`no route ${req.method} ${path}: POST /v1/<operation>, POST /mcp, GET /openapi.json`);
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      throw new MethodNotAllowedError(`${req.method} ${path}: use POST${isMcp ? ' (this MCP endpoint is stateless: no SSE stream, no sessions)' : ''}`);
    }
    const address = req.socket.remoteAddress ?? 'local';
    addressLimiter.take(address);
    const secret = bearerSecret(req);
    if (secret === undefined) {
      throw new UnauthenticatedError('missing', 'an Authorization: Bearer <token> header is required (a token from `baton token create`, or $BATON_TOKEN inside a run)');
    }
    const closed = new AbortController();
    res.once('close', () => closed.abort());
    const caller: Caller = { secret, address, checked: false, signal: closed.signal };
    // The token before the body: a bad one is refused without its body being read.
    await checkToken(caller, operation);
    let body: unknown;
    try {
      body = await readJsonBody(req, maxBodyBytes);
    } catch (error) {
      await checkToken(caller, operation, true);
      throw error;
    }
    if (isMcp) return serveMcp(req, res, body ?? {}, (name, input) => act(caller, name, input), { log, requestId });
    answer(200, await act(caller, operation!, body));
  }

  return { perform, handle, close: () => gate.flush() };
}

function bearerSecret(req: http.IncomingMessage): string | undefined {
  const match = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

/** The body as JSON; undefined when there is none (an operation takes that as {}). */
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
      if (!text.trim()) return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch (error) {
        reject(new InvalidInputError(`the body is not JSON: ${(error as Error).message}`));
      }
    });
    // The caller hung up mid-body (`aborted`): its doing, and nobody is left to answer.
    req.once('error', (error) => reject(new InvalidInputError(`the body could not be read: ${error.message}`)));
  });
}
