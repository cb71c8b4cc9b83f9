// The agent API's MCP side as a client sees it (issue 21): every tool carries a title and MCP's
// hints (read-only, destructive, idempotent, open-world) from the operation table, a result comes
// back as structured content as well as text, and a token sees only the tools its scopes allow,
// through `baton serve`'s Streamable HTTP door and through `baton mcp` over stdio, while a call
// outside them is refused as it always was. Real tokens, real Postgres, real SDK clients.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentApi } from '../../src/api/agentApi.js';
import { mcpToolName } from '../../src/api/agentMcp.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { OPERATION_NAMES, type OperationName, type TokenScope } from '../../src/api/operationNames.js';
import { OPERATIONS } from '../../src/api/operations.js';
import { newTokenSecret, secretSha256 } from '../../src/api/tokenSecret.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import { runTokenIssue } from '../../src/db/sql/tokens.js';
import { BATON_BIN, packageVersion } from '../../src/packageRoot.js';
import { cleanEnv } from '../helpers/cli.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { runningTask } from '../helpers/tools.js';
import { call, mcpClient, tokenFor, useAgentServer } from './helpers.js';

const db = useTestDatabase();
// This server says it reaches Temporal, so it lists the operator's actions; none is called here.
const serve = useAgentServer(() => db, { workflows: () => Promise.reject(new Error('this test reaches no Temporal')) });

/** A command run's own endpoint whose worker has tools, and its run's token. */
let runEndpoint: AgentServer;
let runSecret: string;
beforeAll(async () => {
  const worker = await db.login('baton_worker');
  const fence = await runningTask(db.pool);
  runSecret = newTokenSecret();
  await runTokenIssue(worker.pool, fence, 'mcp-runner', secretSha256(runSecret));
  const api = createAgentApi({
    db: worker.pool,
    localRun: {
      taskId: fence.taskId,
      claimVersion: fence.claimVersion,
      callTool: async () => Promise.reject(new Error('no tool is called here')),
      reportProgress: () => undefined,
    },
    // As a worker's: its own Temporal, for the subtasks its agent proposes.
    workflows: () => Promise.reject(new Error('this test reaches no Temporal')),
  });
  runEndpoint = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await runEndpoint?.close();
});

/** The tools `secret` sees at `url`, by name. */
async function toolsAt(url: string, secret: string): Promise<Tool[]> {
  const mcp = await mcpClient(url, secret);
  try {
    return (await mcp.client.listTools()).tools;
  } finally {
    await mcp.client.close();
  }
}

/** The tool names of `operations`, in the table's order. */
const toolsOf = (operations: readonly OperationName[]) => OPERATION_NAMES.filter((o) => operations.includes(o)).map(mcpToolName);
const withScope = (...scopes: string[]) => OPERATION_NAMES.filter((o) => scopes.includes(OPERATIONS[o].scope));

/** A pooled run's token, taken through `baton serve` by a token with `scopes` (submit among them). */
async function pooledRunToken(scopes: TokenScope[]): Promise<string> {
  const worker = await db.login('baton_worker');
  const pool = uniqueObjectKey('mcp');
  await poolOffer(worker.pool, await runningTask(db.pool), pool);
  const taker = await tokenFor(db, 'mcp-taker', scopes);
  const taken = await call(serve.url, taker.secret, 'pool.claim', { pool });
  expect(taken.status, JSON.stringify(taken.body)).toBe(200);
  return taken.body.runToken as string;
}

/** `baton mcp` over stdio with BATON_URL and BATON_TOKEN, as a run's .mcp.json starts it. */
async function stdioClient(url: string, secret: string, stderr: 'inherit' | 'ignore' = 'inherit'): Promise<Client> {
  const client = new Client({ name: 'mcp-stdio', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BATON_BIN, 'mcp'],
      env: cleanEnv({ BATON_URL: url, BATON_TOKEN: secret }) as Record<string, string>,
      stderr,
    }),
  );
  return client;
}

type CallResult = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };

/**
 * What each tool is, as its hints say it, operation by operation: `read` (read-only), else `write`
 * or `destructive`, `idempotent` when a repeat changes nothing more, `open` when it reaches outside baton.
 */
const EXPECTED: Record<string, string> = {
  whoami: 'read',
  context: 'read',
  heartbeat: 'write idempotent',
  submit: 'write idempotent',
  tool_call: 'destructive idempotent open',
  task_propose: 'write',
  note_add: 'write',
  notes_list: 'read',
  pool_claim: 'write',
  object_create: 'write idempotent',
  object_grant: 'destructive idempotent',
  object_reserve: 'destructive idempotent',
  object_show: 'read',
  object_read: 'write idempotent',
  object_check: 'read',
  object_log: 'read',
  object_take: 'destructive idempotent',
  object_write: 'destructive idempotent',
  object_heartbeat: 'write idempotent',
  object_release: 'write idempotent',
  object_offer: 'write idempotent',
  object_accept: 'write idempotent',
  object_decline: 'write idempotent',
  object_withdraw: 'write idempotent',
  object_suggest: 'write',
  object_approve: 'destructive idempotent',
  graphs_list: 'read',
  graph_show: 'read',
  task_show: 'read',
  events_list: 'read',
  objects_list: 'read',
  inbox_wait: 'read',
  pools_list: 'read',
  tokens_list: 'read',
  task_cancel: 'destructive idempotent',
  graph_cancel: 'destructive idempotent',
  task_rerun: 'destructive idempotent',
  graph_add: 'write',
  approvals_list: 'read',
  task_approve: 'destructive',
  task_reject: 'destructive',
  proposals_list: 'read',
  proposal_accept: 'write',
  proposal_decline: 'write',
};

describe('the MCP tools of the agent API', () => {
  it('annotate every operation from its effect in the table: a title, and all four of MCP’s hints', async () => {
    // No one token sees every tool: an administrator's the operations outside runs, a run's the rest.
    const admin = await tokenFor(db, 'mcp-admin', ['admin']);
    const tools = [...(await toolsAt(serve.url, admin.secret)), ...(await toolsAt(runEndpoint.url, runSecret))];
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual(OPERATION_NAMES.map(mcpToolName).sort());
    const seen: Record<string, string> = {};
    for (const [name, tool] of byName) {
      const hints = tool.annotations!;
      expect(tool.title, name).toMatch(/^\S.{2,40}$/);
      expect(hints, name).toEqual({
        title: tool.title,
        readOnlyHint: expect.any(Boolean),
        destructiveHint: expect.any(Boolean),
        idempotentHint: expect.any(Boolean),
        openWorldHint: expect.any(Boolean),
      });
      // A read-only tool is, by MCP's definitions, neither destructive nor repeated to any effect.
      if (hints.readOnlyHint)
        expect([hints.destructiveHint, hints.idempotentHint, hints.openWorldHint], name).toEqual([false, true, false]);
      seen[name] = hints.readOnlyHint
        ? 'read'
        : [hints.destructiveHint ? 'destructive' : 'write', hints.idempotentHint && 'idempotent', hints.openWorldHint && 'open']
            .filter(Boolean)
            .join(' ');
      // No invented output schemas: the operations declare none.
      expect(tool.outputSchema, name).toBeUndefined();
    }
    expect(seen).toEqual(EXPECTED);
  });

  it('answer with structured content as well as text: an object as it is, a list under `result`, a refusal as its problem', async () => {
    const t = await tokenFor(db, 'mcp-structured', ['read', 'notes', 'objects']);
    const key = uniqueObjectKey('mcp/structured');
    const mcp = await mcpClient(serve.url, t.secret);
    const relay = await stdioClient(serve.url, t.secret);
    try {
      await mcp.use('object.create', { key, content: 'v1' });
      for (const [via, client] of [
        ['HTTP', mcp.client],
        ['stdio', relay],
      ] as const) {
        const tool = async (name: string, args: Record<string, unknown>) =>
          (await client.callTool({ name, arguments: args })) as CallResult;
        expect(client.getServerVersion(), via).toEqual({ name: 'baton', version: packageVersion() });
        const whoami = await tool('whoami', {});
        expect(whoami.isError ?? false, via).toBe(false);
        expect(whoami.structuredContent, via).toEqual(JSON.parse(whoami.content[0]!.text));
        expect(whoami.structuredContent, via).toMatchObject({ identity: 'mcp-structured' });
        const log = await tool('object_log', { key });
        const events = JSON.parse(log.content[0]!.text);
        expect(
          events.map((e: { kind: string }) => e.kind),
          via,
        ).toEqual(['created']);
        expect(log.structuredContent, via).toEqual({ result: events });
        const refused = await tool('object_take', { key, actor: 'someone-else' });
        expect(refused.isError, via).toBe(true);
        expect(refused.structuredContent, via).toEqual(JSON.parse(refused.content[0]!.text));
        expect(refused.structuredContent, via).toMatchObject({ code: 'invalid_input', status: 400 });
      }
    } finally {
      await relay.close();
      await mcp.client.close();
    }
  });

  it('list only what a token’s scopes allow, and refuse a call outside them as before (HTTP door and `baton mcp` over stdio)', async () => {
    const reader = await tokenFor(db, 'mcp-reader', ['read']);
    const names = async (url: string, secret: string) => (await toolsAt(url, secret)).map((tool) => tool.name);
    expect(await names(serve.url, reader.secret)).toEqual(toolsOf(withScope('read')));
    expect(await names(serve.url, (await tokenFor(db, 'mcp-submitter', ['submit'])).secret)).toEqual(['pool_claim']);
    expect(await names(serve.url, (await tokenFor(db, 'mcp-writer', ['notes', 'objects'])).secret)).toEqual(
      toolsOf(withScope('notes', 'objects')),
    );
    expect(await names(serve.url, (await tokenFor(db, 'mcp-root', ['admin'])).secret)).toEqual(
      toolsOf(withScope('read', 'notes', 'objects', 'submit', 'view', 'approve', 'admin')),
    );
    // A pooled run's token (taken by a read,submit token: scope read) on `baton serve`: its run's
    // operations and its scope's, no further runs, and no tool calls, which only a run's own endpoint makes.
    expect(await names(serve.url, await pooledRunToken(['read', 'submit']))).toEqual(
      toolsOf(['context', 'heartbeat', 'submit', 'task.propose', ...withScope('read')]),
    );
    // A command run's token on its run's endpoint, whose worker has tools.
    expect(await names(runEndpoint.url, runSecret)).toEqual(
      toolsOf(['context', 'heartbeat', 'submit', 'tool.call', 'task.propose', ...withScope('read', 'notes', 'objects')]),
    );

    // A tool it was not shown is still refused by the operation, with the problem HTTP gives.
    const viaHttp = await call(serve.url, reader.secret, 'note.add', { text: 'hi', taskId: 'nope/t' });
    expect(viaHttp).toMatchObject({ status: 403, body: { code: 'forbidden', refusal: 'scope' } });
    const mcp = await mcpClient(serve.url, reader.secret);
    const relay = await stdioClient(serve.url, reader.secret);
    try {
      await expect(mcp.use('note.add', { text: 'hi', taskId: 'nope/t' })).rejects.toMatchObject({
        code: 'forbidden',
        refusal: 'scope',
        detail: viaHttp.body.detail,
      });
      expect((await relay.listTools()).tools.map((tool) => tool.name)).toEqual(toolsOf(withScope('read')));
      const relayed = (await relay.callTool({ name: 'note_add', arguments: { text: 'hi', taskId: 'nope/t' } })) as CallResult;
      expect(relayed.isError).toBe(true);
      expect(relayed.structuredContent).toMatchObject({ code: 'forbidden', refusal: 'scope', detail: viaHttp.body.detail });
    } finally {
      await relay.close();
      await mcp.client.close();
    }
    const { rows } = await db.pool.query(
      `SELECT details->>'refusal' AS refusal FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'mcp-reader' AND kind = 'api_refused'`,
    );
    expect(rows.map((r) => r.refusal)).toEqual(['scope', 'scope', 'scope']);
  });

  it('name an agent API that does not answer, through `baton mcp`, as api_unreachable', async () => {
    const gone = await startAgentServer(createAgentApi({ db: db.pool }), { port: 0, host: '127.0.0.1' });
    await gone.close();
    // Its log (stderr) has the failure's stack; the client gets the problem.
    const relay = await stdioClient(gone.url, newTokenSecret(), 'ignore');
    try {
      const failed = (await relay.callTool({ name: 'whoami', arguments: {} })) as CallResult;
      expect(failed.isError).toBe(true);
      expect(failed.structuredContent).toMatchObject({
        code: 'api_unreachable',
        status: 503,
        detail: expect.stringMatching(`^cannot reach the baton agent API at ${gone.url}: nothing is listening there`),
      });
      await expect(relay.listTools()).rejects.toThrow(new RegExp(`cannot reach the baton agent API at ${gone.url}`));
    } finally {
      await relay.close();
    }
  });
});
