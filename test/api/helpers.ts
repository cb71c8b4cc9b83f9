import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll } from 'vitest';
import { createAgentApi, type AgentApiOptions } from '../../src/api/agentApi.js';
import { mcpToolName } from '../../src/api/agentMcp.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { agentTokenCreate, type TokenInfo } from '../../src/api/tokens.js';
import type { OperationName, TokenScope } from '../../src/api/operationNames.js';
import { taskClaim } from '../../src/db/sql/claims.js';
import { taskNoteAdd, taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import type { TestDatabase } from '../helpers/db.js';
import { artifact, LEASE_MS } from '../helpers/tasks.js';

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

/**
 * A graph of `up` (submitted as revision a...a, verified, with a note of its agent's) and `down`
 * (pinned to it, claimed by worker w-1 on the worker login): their ids, and `down`'s fence.
 */
export async function pinnedPair(db: TestDatabase, prefix: string) {
  const graphId = await insertGraph(db.pool, { up: [], down: ['up'] }, { prefix });
  const [up, down] = [`${graphId}/up`, `${graphId}/down`];
  const upClaim = (await taskClaim(db.pool, up, 'w-0', LEASE_MS))!;
  await taskSubmit(db.pool, { taskId: up, owner: 'w-0', claimVersion: upClaim.claimVersion }, artifact('a'.repeat(40)));
  await verificationStart(db.pool, up, 'verifier');
  await verificationRecord(db.pool, {
    taskId: up,
    verifier: 'verifier',
    claimVersion: upClaim.claimVersion,
    revision: 'a'.repeat(40),
    command: 'check',
    exitCode: 0,
    outputDigest: 'sha256:x',
    outputTail: '',
  });
  await taskNoteAdd(db.pool, up, 'up-agent', 'the upstream found a bug in the parser');
  const worker = await db.login('baton_worker');
  const downClaim = (await taskClaim(worker.pool, down, 'w-1', LEASE_MS))!;
  return { graphId, up, down, fence: { taskId: down, owner: 'w-1', claimVersion: downClaim.claimVersion } };
}
