// The page's one way to baton: `POST /v1/<operation>` of the agent API with the token its user
// gave, kept for this tab only (sessionStorage). What a token may see is the store's decision.
import type { AgentApiResult } from '../../src/api/operationResults.js';
import type { OperationName } from '../../src/api/operationNames.js';

const TOKEN_KEY = 'baton.token';

/** A refusal or failure as the API answered it (RFC 9457 problem details), or a request that never got an answer. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The token is missing, unknown, expired or revoked: the user must give another. */
  get tokenRefused(): boolean {
    return this.status === 401;
  }
  /** No answer came: the server is down or the network is. */
  get unreachable(): boolean {
    return this.status === 0;
  }
}

export function savedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function saveToken(token: string | undefined): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * A token handed over in the address's fragment (`baton dev` prints one: `#token=...`, optionally
 * followed by `&/graph/<id>`), which no browser sends to a server: kept for the tab, and taken out
 * of the address bar and history, leaving the route that followed it.
 */
export function takeTokenFromAddress(): void {
  const parts = location.hash.replace(/^#/, '').split('&');
  const token = parts.find((p) => p.startsWith('token='));
  if (!token) return;
  let secret = token.slice('token='.length);
  try {
    secret = decodeURIComponent(secret);
  } catch {
    // a stray % in it: taken as written, and the API says whether it is a token
  }
  saveToken(secret);
  const route = parts.filter((p) => p !== token).join('&');
  history.replaceState(null, '', `${location.pathname}#${route || '/'}`);
}

/** Calls `operation` with `input`; throws ApiError with the server's own words. */
export async function api<Op extends OperationName>(
  operation: Op,
  input: Record<string, unknown> = {},
  signal?: AbortSignal,
): Promise<AgentApiResult<Op>> {
  const token = savedToken();
  let response: Response;
  try {
    response = await fetch(`/v1/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(input),
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, 'unreachable', `baton does not answer (${(error as Error).message})`);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(response.status, 'not_json', `baton answered ${response.status} with something that is not JSON`);
  }
  if (!response.ok) {
    const problem = body as { code?: string; detail?: string };
    throw new ApiError(response.status, problem.code ?? 'error', problem.detail ?? `baton answered ${response.status}`);
  }
  return body as AgentApiResult<Op>;
}

/** The page's settings from its server: where the Temporal UI is. */
export interface PageConfig {
  temporalUi?: { url: string; namespace: string };
}

export async function pageConfig(): Promise<PageConfig> {
  const response = await fetch('/ui/config.json');
  return response.ok ? ((await response.json()) as PageConfig) : {};
}

/**
 * The Temporal UI's page of a workflow (`{ workflowId }`) or of the workflows a list filter finds
 * (`{ query }`), when the server knows where the UI is.
 */
export function temporalLink(config: PageConfig, to: { workflowId: string } | { query: string }): string | undefined {
  const ui = config.temporalUi;
  if (!ui) return undefined;
  const workflows = `${ui.url.replace(/\/$/, '')}/namespaces/${encodeURIComponent(ui.namespace)}/workflows`;
  return 'workflowId' in to ? `${workflows}/${encodeURIComponent(to.workflowId)}` : `${workflows}?query=${encodeURIComponent(to.query)}`;
}
