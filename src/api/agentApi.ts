// The agent API (SPEC U3, U7): every operation of src/api/operations.ts performed for a bearer
// token, called directly (`perform`) or over HTTP and MCP (src/api/httpHandler.ts). This file
// composes the jobs: the token gate and rate limits first, then the operation's input, then the
// dispatcher (src/api/dispatch.ts). The same API serves `baton serve` and each run's own endpoint;
// a run's endpoint also carries the run (`LocalRun`), which performs its tool calls and takes its progress.
import type http from 'node:http';
import type { Queryable } from '../db/queryable.js';
import { NotFoundError } from '../errors.js';
import { stderrLog, type Log } from '../log.js';
import { agentAuthenticate, agentOperations, agentRefusalsSummarise } from './agentDoor.js';
import { createDispatch, type DispatchOptions } from './dispatch.js';
import { UnauthenticatedError } from './errors.js';
import { callOutcome, createHttpHandler, type ApiCallObserver, type Caller } from './httpHandler.js';
import { MAX_BODY_BYTES_DEFAULT, RATE_LIMIT_DEFAULT } from './limits.js';
import { isOperationName, OPERATION_NAMES, type OperationName } from './operationNames.js';
import type { OperatorPage } from './operatorPage.js';
import { parseOperationInput } from './operations.js';
import { rateLimiter, type RateLimit } from './rateLimiter.js';
import { createTokenGate } from './tokenGate.js';
import { secretSha256 } from './tokenSecret.js';

/** What a server performs only with Temporal (DispatchOptions.workflows). */
const TEMPORAL_ACTIONS: ReadonlySet<OperationName> = new Set([
  'task.cancel',
  'graph.cancel',
  'task.rerun',
  'graph.add',
  'task.propose',
  'proposal.accept',
]);

export interface AgentApiOptions extends DispatchOptions {
  db: Queryable;
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
  /** The operator's page, served at /ui/ (`baton serve`). (Default: none) */
  page?: OperatorPage;
  /** Told of every call answered, for the metrics. (Default: none) */
  observe?: ApiCallObserver;
}

export interface AgentApi {
  /** Checks the token, validates `input` and performs `operation` with the token `secret`, as a call from `address`. */
  perform(secret: string, operation: string, input: unknown, options?: { signal?: AbortSignal; address?: string }): Promise<unknown>;
  /** Answers one HTTP request: /v1/<operation>, /mcp, /openapi.json, /healthz. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void;
}

export function createAgentApi(options: AgentApiOptions): AgentApi & { close(): Promise<void> } {
  const { db } = options;
  const log = options.log ?? stderrLog;
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
  const dispatch = createDispatch(db, options);

  /** The token first: asked of the store unless known here (or, with `recheck`, unless asked during this request). */
  async function checkToken(caller: Caller, operation: string | undefined, recheck = false): Promise<void> {
    if (recheck && caller.checked) return;
    await gate.check(
      caller.address,
      secretSha256(caller.secret),
      async () => {
        caller.checked = true;
        await agentAuthenticate(db, caller.secret, operation !== undefined && isOperationName(operation) ? operation : undefined);
      },
      recheck,
    );
  }

  async function perform(
    secret: string,
    operation: string,
    input: unknown,
    opts: { signal?: AbortSignal; address?: string } = {},
  ): Promise<unknown> {
    const caller: Caller = { secret, address: opts.address ?? 'local', checked: false, signal: opts.signal };
    await checkToken(caller, operation);
    return act(caller, operation, input);
  }

  /** `performChecked`, its outcome and time told to `options.observe` (the metrics). */
  async function act(caller: Caller, operation: string, input: unknown): Promise<unknown> {
    if (!options.observe) return performChecked(caller, operation, input);
    const started = performance.now();
    const label = isOperationName(operation) ? operation : 'unknown';
    try {
      const result = await performChecked(caller, operation, input);
      options.observe(label, 'ok', (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      options.observe(label, callOutcome(error), (performance.now() - started) / 1000);
      throw error;
    }
  }

  /** Performs `operation` for a caller whose token passed the gate; input it refuses is refused only once the token is checked. */
  async function performChecked(caller: Caller, operation: string, input: unknown): Promise<unknown> {
    limiter.take(secretSha256(caller.secret));
    let args: Record<string, unknown>;
    try {
      if (!isOperationName(operation)) {
        throw new NotFoundError(`no operation ${JSON.stringify(operation)}; the operations are ${OPERATION_NAMES.join(', ')}`);
      }
      args = parseOperationInput(operation, input);
    } catch (error) {
      await checkToken(caller, operation, true);
      throw error;
    }
    return forgettingRefused(caller, () => dispatch(caller.secret, operation as OperationName, args, caller.signal));
  }

  /** `fn`'s result; a token the store refuses (revoked or expired since it was accepted) is checked again before the next call's body is read. */
  async function forgettingRefused<T>(caller: Caller, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof UnauthenticatedError) gate.forget(secretSha256(caller.secret));
      throw error;
    }
  }

  /**
   * The operations a caller whose token passed the gate may call here: those its scopes allow,
   * without `tool.call` where this server performs none (`baton serve`, a run whose worker has no tools),
   * without the actions that start or stop workflows where it reaches no Temporal.
   */
  async function operationsFor(caller: Caller): Promise<OperationName[]> {
    limiter.take(secretSha256(caller.secret));
    const allowed = await forgettingRefused(caller, () => agentOperations(db, caller.secret, OPERATION_NAMES));
    return allowed.filter(
      (name) => (name !== 'tool.call' || options.localRun?.callTool) && (options.workflows || !TEMPORAL_ACTIONS.has(name)),
    );
  }

  const handle = createHttpHandler({
    checkToken,
    act,
    operationsFor,
    takeFromAddress: (address) => addressLimiter.take(address),
    maxBodyBytes: options.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT,
    log,
    page: options.page,
    observe: options.observe,
  });

  return { perform, handle, close: () => gate.flush() };
}
