import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll } from 'vitest';
import { createAgentApi, type AgentApiOptions } from '../../src/api/agentApi.js';
import { mcpToolName } from '../../src/api/agentMcp.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { agentTokenCreate, type TokenInfo } from '../../src/api/tokens.js';
import type { OperationName, TokenScope } from '../../src/api/operationNames.js';
import type { TestDatabase } from '../helpers/db.js';

/** `baton serve` as a test runs it: the agent API on 127.0.0.1, on its own baton_agent login. */
export function useAgentServer(db: () => TestDatabase, options: Omit<AgentApiOptions, 'db'> = {}): { readonly url: string } {
  let server: AgentServer | undefined;
  let api: ReturnType<typeof createAgentApi> | undefined;
  beforeAll(async () => {
    const login = await db().login('baton_agent');
    api = createAgentApi({ db: login.pool, ...options });
    server = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
    await api?.close();
  });
  return {
    get url() {
      return server!.url;
    },
  };
}

/** A token as an operator makes it (`baton token create`), on the client login. */
export async function tokenFor(
  db: TestDatabase,
  identity: string,
  scopes: TokenScope[] = ['read', 'notes', 'objects'],
  expiresInMs?: number,
): Promise<{ secret: string; token: TokenInfo }> {
  const client = await db.login('baton_client');
  return agentTokenCreate(client.pool, { identity, scopes, expiresInMs, createdBy: 'operator' });
}

/** One HTTP call of the agent API; the body as parsed JSON. */
export async function call(
  url: string,
  secret: string | undefined,
  operation: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${url}/v1/${operation}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body ?? {}),
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), body: text ? (JSON.parse(text) as any) : null };
}

/** An MCP client of the SDK, over Streamable HTTP to `url`/mcp, with `secret` as its bearer token; `use` throws a refusal's problem details. */
export async function mcpClient(url: string, secret: string) {
  const client = new Client({ name: 'baton-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
  );
  const use = async (operation: OperationName, input: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name: mcpToolName(operation), arguments: input })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    const body = JSON.parse(result.content[0]!.text);
    if (result.isError) throw Object.assign(new Error(body.detail), body);
    return body;
  };
  return { client, use };
}
