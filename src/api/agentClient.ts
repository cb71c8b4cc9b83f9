// How the `baton` command (inside a run, or anywhere with BATON_URL and BATON_TOKEN) calls the agent
// API: one POST per operation, over TCP or the run's Unix socket. Errors come back as problem
// details and are thrown as AgentApiError with their stable code; an endpoint where nothing
// answers is AgentApiUnreachableError.
import { readEnv } from '../config.js';
import { NODE_CONNECTION_ERRORS } from '../errors.js';
import { httpRequest, HttpRequestError, type HttpAnswer } from '../tools/httpRequest.js';
import { AgentApiUnreachableError } from './errors.js';
import { AGENT_SOCKET_ENV, AGENT_TOKEN_ENV, AGENT_URL_ENV } from './agentServer.js';
import type { OperationName } from './operationNames.js';
import type { AgentApiResult } from './operationResults.js';
import type { AgentApiInput } from './operations.js';

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

/** One POST to the endpoint: its answer, or AgentApiUnreachableError when it surely never arrived. */
async function post(endpoint: AgentEndpoint, path: string, body: string, headers: Record<string, string>, timeoutMs: number) {
  try {
    return await httpRequest(`${endpoint.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${endpoint.token}`, 'content-type': 'application/json', ...headers },
      body,
      timeoutMs,
      ...(endpoint.socketPath ? { socketPath: endpoint.socketPath } : {}),
    });
  } catch (error) {
    // Only a failure of a request that surely never arrived; any other may have reached the server.
    const [reason, mayHaveActed] = (error instanceof HttpRequestError && NODE_CONNECTION_ERRORS[error.code]) || [];
    if (reason === undefined || mayHaveActed) throw error;
    throw new AgentApiUnreachableError(endpoint.socketPath ? `${endpoint.url} (socket ${endpoint.socketPath})` : endpoint.url, reason);
  }
}

/** The answer's JSON body when it is 200; else the problem it carries, as AgentApiError. */
function resultOf(answer: HttpAnswer): unknown {
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

/**
 * Performs `operation` and returns its result (`AgentApiResult<operation>`, JSON as the server sent it). An
 * answer that is not a result throws AgentApiError; nothing answering throws
 * AgentApiUnreachableError (the call never arrived); no complete answer otherwise throws
 * HttpRequestError (it may have been performed).
 */
export async function callAgentApi<Op extends OperationName>(
  endpoint: AgentEndpoint,
  operation: Op,
  input: AgentApiInput<Op>,
  timeoutMs: number,
): Promise<AgentApiResult<Op>> {
  return resultOf(await post(endpoint, `/v1/${operation}`, JSON.stringify(input ?? {}), {}, timeoutMs)) as AgentApiResult<Op>;
}

/**
 * The names of the MCP tools the endpoint lists for this token (one `tools/list` of its stateless
 * `/mcp`): the operations its scopes allow there. Throws as `callAgentApi` does.
 */
export async function listAgentTools(endpoint: AgentEndpoint, timeoutMs: number): Promise<string[]> {
  const request = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  const answer = await post(endpoint, '/mcp', request, { accept: 'application/json, text/event-stream' }, timeoutMs);
  const reply = resultOf(answer) as { result?: { tools?: { name: string }[] }; error?: { message?: string } } | null;
  if (!Array.isArray(reply?.result?.tools)) {
    throw new AgentApiError(
      answer.status,
      'internal',
      `tools/list was answered without tools: ${reply?.error?.message ?? answer.body.slice(0, 200)}`,
      {},
    );
  }
  return reply.result.tools.map((tool) => tool.name);
}

export { HttpRequestError };
