// How the agent API answers what it did not do: RFC 9457 problem details, the same over HTTP and
// MCP. A failure that is not a refusal (a 5xx) is logged with its stack and causes under the request's id,
// and the caller gets that id, so a report of one can be found in the log.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { inspect } from 'node:util';
import { BatonError, errorResponse } from '../errors.js';
import type { Log } from '../log.js';

/** Response header carrying the id of every request (also `requestId` in a 5xx's problem). */
export const REQUEST_ID_HEADER = 'x-request-id';

interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  [extra: string]: unknown;
}

/** A new request id. */
export function newRequestId(): string {
  return randomUUID();
}

/** RFC 9457 problem details: a stable `code`, a specific `detail`, and what the caller needs to act. */
export function problemOf(error: unknown): Problem {
  // A problem that came from another endpoint (`baton mcp` relaying a run's) is passed on as it came.
  const relayed = (error as { problem?: Problem } | null)?.problem;
  if (relayed && typeof relayed.code === 'string') return relayed;
  if (!(error instanceof BatonError)) {
    const detail = 'the server failed; nothing was done that you need to repeat differently (its log has the details under requestId)';
    return {
      type: 'urn:baton:error:internal',
      title: error instanceof Error ? error.name : 'Error',
      status: 500,
      code: 'internal',
      detail,
    };
  }
  const { httpStatus } = errorResponse(error);
  return {
    type: `urn:baton:error:${error.code}`,
    title: error.name,
    status: httpStatus,
    code: error.code,
    detail: error.message,
    ...error.details,
  };
}

/** `error`'s problem for request `requestId`; a 5xx is logged with its stack and names the request. */
export function answerProblem(log: Log, requestId: string, what: string, error: unknown): Problem {
  const problem = problemOf(error);
  // A relayed 5xx was logged where it happened, under the id it carries.
  if (problem.status < 500 || typeof problem.requestId === 'string') return problem;
  log(`baton agent API: request ${requestId} (${what}) failed with ${problem.status}: ${inspect(error, { depth: 4 })}`);
  return { ...problem, requestId };
}

/** Answers with a problem, unless an answer has begun; 401 and 429 with the headers they call for. */
export function sendProblem(res: http.ServerResponse, problem: Problem): void {
  if (res.headersSent) return;
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (problem.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
  if (typeof problem.retryAfterMs === 'number') headers['retry-after'] = String(Math.ceil(problem.retryAfterMs / 1000));
  res.writeHead(problem.status, headers).end(JSON.stringify(problem));
}
