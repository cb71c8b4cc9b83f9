import { createHash } from 'node:crypto';
import { InvalidInputError } from '../errors.js';
import { httpRequest, type HttpAnswer, type HttpRequestError } from './httpRequest.js';
import type { ExecuteOutcome, Json, LookupFinding, ToolAdapter } from './types.js';

/** How long one HTTP request to a tool may take before its outcome counts as uncertain. (Default: 10s) */
const HTTP_TOOL_TIMEOUT_MS_DEFAULT = 10_000;
/** Largest response body kept as a call's result; a bigger one is kept as its digest. */
const HTTP_TOOL_MAX_RESULT_BYTES = 8 * 1024;
/** The header that carries the idempotency key, as Stripe, Adyen and the IETF draft name it. */
const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

export interface HttpToolOptions {
  /** Where a call goes, with its parameters as the JSON body and the key in `Idempotency-Key`. */
  url: string;
  /** (Default: `POST`) */
  method?: 'POST' | 'PUT' | 'PATCH';
  /**
   * Where to ask whether a key's effect happened: `{key}` is replaced by the URL-encoded key.
   * 200 means found (its JSON body is the result), 404 means it did not happen, anything else
   * cannot tell. (Default: none: the tool cannot say, so an uncertain call is not repeated
   * unless `idempotent`)
   */
  lookupUrl?: string;
  /** The tool dedupes by `Idempotency-Key`, so repeating a call is safe. (Default: false) */
  idempotent?: boolean;
  /** Sent with every request, e.g. `Authorization`; the agent never sees them. (Default: none) */
  headers?: Record<string, string>;
  /** (Default: 10s) */
  timeoutMs?: number;
  /** U11: at most this many calls sent in any minute, over every task and worker. (Default: no limit) */
  ratePerMinute?: number;
}

/**
 * The built-in HTTP adapter. Outcomes: 2xx succeeded; 429 and a refused connection failed before
 * acting (retryable); other 4xx failed; 5xx, 408, a timeout and a connection reset uncertain,
 * because the tool may have acted before it answered or the answer was lost.
 */
export function createHttpTool(options: HttpToolOptions): ToolAdapter {
  validateUrl(options.url, 'url');
  if (options.lookupUrl !== undefined) {
    validateUrl(options.lookupUrl.replaceAll('{key}', 'k'), 'lookupUrl');
    if (!options.lookupUrl.includes('{key}')) throw new InvalidInputError(`lookupUrl ${options.lookupUrl} must contain {key}`);
  }
  const timeoutMs = options.timeoutMs ?? HTTP_TOOL_TIMEOUT_MS_DEFAULT;
  const send = (url: string, method: string, headers: Record<string, string>, body?: string) =>
    httpRequest(url, { method, headers: { ...options.headers, ...headers }, body, timeoutMs });
  const adapter: ToolAdapter = {
    idempotent: options.idempotent ?? false,
    ...(options.ratePerMinute !== undefined && { ratePerMinute: options.ratePerMinute }),
    async execute(key, params): Promise<ExecuteOutcome> {
      let answer: HttpAnswer;
      try {
        answer = await send(
          options.url,
          options.method ?? 'POST',
          { 'content-type': 'application/json', [IDEMPOTENCY_KEY_HEADER]: key },
          JSON.stringify(params),
        );
      } catch (error) {
        return requestError(error as HttpRequestError, timeoutMs);
      }
      const { status, body } = answer;
      if (status >= 200 && status < 300) return { outcome: 'succeeded', result: resultOf(status, body) };
      if (status >= 500 || status === 408) return { outcome: 'uncertain', reason: `HTTP ${status}: ${body.slice(0, 200)}` };
      return { outcome: 'failed', error: `HTTP ${status}: ${body.slice(0, 500)}`, retryable: status === 429 };
    },
  };
  if (options.lookupUrl) {
    const lookupUrl = options.lookupUrl;
    adapter.lookup = async (key): Promise<LookupFinding> => {
      let answer: HttpAnswer;
      try {
        answer = await send(lookupUrl.replaceAll('{key}', encodeURIComponent(key)), 'GET', { accept: 'application/json' });
      } catch (error) {
        return { finding: 'unknown', reason: `lookup got no answer: ${(error as Error).message}` };
      }
      if (answer.status === 200) return { finding: 'found', result: resultOf(answer.status, answer.body) };
      if (answer.status === 404) return { finding: 'absent' };
      return { finding: 'unknown', reason: `lookup answered HTTP ${answer.status}: ${answer.body.slice(0, 200)}` };
    };
  }
  return adapter;
}

function validateUrl(url: string, what: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`${what} ${url} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new InvalidInputError(`${what} ${url} must be http or https`);
}

/** A small JSON body is the result; anything else is kept as its size and digest. */
function resultOf(status: number, body: string): Json {
  if (Buffer.byteLength(body) <= HTTP_TOOL_MAX_RESULT_BYTES) {
    try {
      return JSON.parse(body) as Json;
    } catch {
      // not JSON: fall through to the digest
    }
  }
  return { status, bytes: Buffer.byteLength(body), sha256: createHash('sha256').update(body).digest('hex') };
}

/** A request that got no answer: refused before sending is certain, everything else is not. */
function requestError(error: HttpRequestError, timeoutMs: number): ExecuteOutcome {
  if (error.code === 'ECONNREFUSED') return { outcome: 'failed', error: `connection refused: ${error.message}`, retryable: true };
  if (error.code === 'TIMEOUT') return { outcome: 'uncertain', reason: `no answer within ${timeoutMs} ms` };
  return { outcome: 'uncertain', reason: `request failed (${error.code}): ${error.message}` };
}
