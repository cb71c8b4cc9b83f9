// How the `baton` command (inside a run, or anywhere with BATON_URL and BATON_TOKEN) calls the agent
// API: one POST per operation, over TCP or the run's Unix socket. Errors come back as problem
// details and are thrown as AgentApiError with their stable code.
import { readEnv } from '../config.js';
import { httpRequest, HttpRequestError } from '../tools/httpRequest.js';
import { AGENT_SOCKET_ENV, AGENT_TOKEN_ENV, AGENT_URL_ENV } from './agentServer.js';
import type { OperationName } from './operationNames.js';

export interface AgentEndpoint {
  url: string;
  token: string;
  socketPath?: string;
}

/** The endpoint from BATON_URL, BATON_TOKEN (and BATON_SOCKET inside an isolated run); undefined when either is unset. */
export function agentEndpointFromEnv(): AgentEndpoint | undefined {
  const url = readEnv(AGENT_URL_ENV);
  const token = readEnv(AGENT_TOKEN_ENV);
  if (!url || !token) return undefined;
  const socketPath = readEnv(AGENT_SOCKET_ENV);
  return { url: url.replace(/\/+$/, ''), token, ...(socketPath ? { socketPath } : {}) };
}

/** What the API answered instead of a result; `code` is stable (src/errors.ts), `status` the HTTP status. */
export class AgentApiError extends Error {
  override readonly name = 'AgentApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly problem: Record<string, unknown>,
  ) {
    super(detail);
  }
}

/**
 * Performs `operation` and returns its result. An answer that is not a result throws AgentApiError;
 * no answer at all throws HttpRequestError (ECONNREFUSED or ENOENT: the call never arrived;
 * otherwise it may have been performed).
 */
export async function callAgentApi(endpoint: AgentEndpoint, operation: OperationName, input: unknown, timeoutMs: number): Promise<unknown> {
  const answer = await httpRequest(`${endpoint.url}/v1/${operation}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${endpoint.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(input ?? {}),
    timeoutMs,
    ...(endpoint.socketPath ? { socketPath: endpoint.socketPath } : {}),
  });
  let body: unknown;
  try {
    body = answer.body ? JSON.parse(answer.body) : null;
  } catch {
    throw new AgentApiError(answer.status, 'internal', `the API answered HTTP ${answer.status} with a body that is not JSON`, {});
  }
  if (answer.status === 200) return body;
  const problem = (body ?? {}) as Record<string, unknown>;
  throw new AgentApiError(answer.status, String(problem.code ?? 'internal'), String(problem.detail ?? `HTTP ${answer.status}`), problem);
}

export { HttpRequestError };
