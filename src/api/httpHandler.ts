// The agent API over HTTP: `POST /v1/<operation>` (JSON in and out, errors as problem details),
// MCP at `/mcp`, the OpenAPI document at `/openapi.json`, `/healthz`, and on `baton serve` the
// operator's page at `/ui/` (src/api/operatorPage.ts). The token is checked
// before the body is read; what a request is allowed to do is decided by `checkToken` and `act`.
import type http from 'node:http';
import { BatonError, InvalidInputError, NotFoundError } from '../errors.js';
import type { Log } from '../log.js';
import { serveMcp } from './agentMcp.js';
import { MethodNotAllowedError, RequestTooLargeError, UnauthenticatedError } from './errors.js';
import { openApiDocument } from './openApi.js';
import type { OperatorPage } from './operatorPage.js';
import { isOperationName, type OperationName } from './operationNames.js';
import { answerProblem, newRequestId, REQUEST_ID_HEADER, sendProblem } from './problems.js';

/**
 * Told of every call the agent API answers (SPEC U6): the operation (`unknown` for a name that is
 * none; `mcp` or `other` for a request refused before it named one), `ok` or the error's code, and
 * how long the answer took.
 */
export type ApiCallObserver = (operation: string, outcome: string, seconds: number) => void;

/** The outcome a call that threw `error` is counted under: the error's code, or `internal`. */
export function callOutcome(error: unknown): string {
  return error instanceof BatonError ? error.code : 'internal';
}

/** Who is calling: the bearer's secret, from where, and whether the store checked that token during this request. */
export interface Caller {
  secret: string;
  address: string;
  checked: boolean;
  signal?: AbortSignal;
}

interface HttpHandlerOptions {
  /** Checks the caller's token (with `recheck`, again unless the store checked it during this request). */
  checkToken(caller: Caller, operation: string | undefined, recheck?: boolean): Promise<void>;
  /** Performs `operation` for a caller whose token passed `checkToken`. */
  act(caller: Caller, operation: string, input: unknown): Promise<unknown>;
  /** The operations a caller whose token passed `checkToken` may call: its MCP tools. */
  operationsFor(caller: Caller): Promise<readonly OperationName[]>;
  /** Takes one call from a client address's budget, or throws RateLimitedError. */
  takeFromAddress(address: string): void;
  maxBodyBytes: number;
  log: Log;
  /** The operator's page, served at /ui/. (Default: none) */
  page?: OperatorPage;
  /** Told of requests refused before an operation was performed (`act` tells of the rest). (Default: none) */
  observe?: ApiCallObserver;
}

/** Answers one HTTP request: /v1/<operation>, /mcp, /openapi.json, /healthz. Nothing a request holds may take the process down. */
export function createHttpHandler(options: HttpHandlerOptions): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const { checkToken, act, log } = options;

  async function route(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    requestId: string,
    request: { acted: boolean },
  ): Promise<void> {
    const answer = (status: number, body: unknown) => {
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.method === 'GET' && path === '/healthz') return answer(200, { ok: true });
    if (req.method === 'GET' && path === '/openapi.json') return answer(200, openApiDocument());
    if (req.method === 'GET' && options.page?.serve(path, res)) return;
    const isMcp = path === '/mcp';
    const operation = path.startsWith('/v1/') ? path.slice('/v1/'.length) : undefined;
    if (!isMcp && operation === undefined)
      throw new NotFoundError(
        `no route ${req.method} ${path}: POST /v1/<operation>, POST /mcp, GET /openapi.json${options.page ? ', GET /ui/ (the operator’s page)' : ''}`,
      );
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      throw new MethodNotAllowedError(
        `${req.method} ${path}: use POST${isMcp ? ' (this MCP endpoint is stateless: no SSE stream, no sessions)' : ''}`,
      );
    }
    const address = req.socket.remoteAddress ?? 'local';
    options.takeFromAddress(address);
    const secret = bearerSecret(req);
    if (secret === undefined) {
      throw new UnauthenticatedError(
        'missing',
        'an Authorization: Bearer <token> header is required (a token from `baton token create`, or $BATON_TOKEN inside a run)',
      );
    }
    const closed = new AbortController();
    res.once('close', () => closed.abort());
    const caller: Caller = { secret, address, checked: false, signal: closed.signal };
    // The token before the body: a bad one is refused without its body being read.
    await checkToken(caller, operation);
    let body: unknown;
    try {
      body = await readJsonBody(req, options.maxBodyBytes);
    } catch (error) {
      await checkToken(caller, operation, true);
      throw error;
    }
    request.acted = true;
    if (isMcp)
      return serveMcp(req, res, body ?? {}, (name, input) => act(caller, name, input), {
        operations: () => options.operationsFor(caller),
        log,
        requestId,
      });
    answer(200, await act(caller, operation!, body));
  }

  return (req, res) => {
    const requestId = newRequestId();
    res.setHeader(REQUEST_ID_HEADER, requestId);
    // Only the path is read, and without URL parsing, which throws on some request targets.
    const path = (req.url ?? '/').split('?')[0]!;
    const request = { acted: false };
    const started = performance.now();
    const fail = (error: unknown) => {
      // Whatever of the body is still coming is read and dropped, so the answer reaches the caller.
      req.resume();
      sendProblem(res, answerProblem(log, requestId, `${req.method} ${path}`, error));
      if (!request.acted) options.observe?.(refusedRoute(path), callOutcome(error), (performance.now() - started) / 1000);
    };
    // Nothing a request holds may take the process down (a run's endpoint lives in the worker).
    route(req, res, path, requestId, request).catch(fail);
  };
}

/** The operation label of a request refused before it was performed: its operation's name when it names one. */
function refusedRoute(path: string): string {
  if (path === '/mcp') return 'mcp';
  const operation = path.startsWith('/v1/') ? path.slice('/v1/'.length) : undefined;
  return operation === undefined ? 'other' : isOperationName(operation) ? operation : 'unknown';
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
