import { afterAll, beforeAll } from 'vitest';
import { createAgentApi, type AgentApiOptions } from '../../src/api/agentApi.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { createToken } from '../../src/api/tokens.js';
import type { TokenScope } from '../../src/api/operations.js';
import type { TestDatabase } from '../helpers/db.js';

/** `baton serve` as a test runs it: the agent API on 127.0.0.1, on its own baton_agent login. */
export function useAgentServer(db: () => TestDatabase, options: Omit<AgentApiOptions, 'db'> = {}): { readonly url: string } {
  let server: AgentServer | undefined;
  beforeAll(async () => {
    const login = await db().login('baton_agent');
    server = await startAgentServer(createAgentApi({ db: login.pool, ...options }), { port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get url() {
      return server!.url;
    },
  };
}

/** A token as an operator makes it (`baton token create`), on the client login. */
export async function tokenFor(db: TestDatabase, identity: string, scopes: TokenScope[] = ['read', 'notes', 'objects'], expiresInMs?: number) {
  const client = await db.login('baton_client');
  return createToken(client.pool, { identity, scopes, expiresInMs, createdBy: 'operator' });
}

/** One HTTP call of the agent API; the body as parsed JSON. */
export async function call(url: string, secret: string | undefined, operation: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/v1/${operation}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body ?? {}),
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), body: text ? (JSON.parse(text) as any) : null };
}
