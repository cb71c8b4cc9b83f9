// The operator's views and actions of the agent API (issue 23, SPEC U4), as any client calls them,
// against a real store and a real Temporal: each answer has exactly the fields its type declares;
// a run's token and a token limited to some notes are refused the whole-deployment views; a reader
// sees only the objects (and object events) it may view and no refused agent calls; the tokens
// view never carries a secret; actions need admin, are recorded under the token's identity, and a
// server without Temporal refuses them before recording anything. The page's files carry a policy
// that runs only their own scripts, and no request reaches a file outside them.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { createAgentApi } from '../../src/api/agentApi.js';
import { callAgentApi, AgentApiError } from '../../src/api/agentClient.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { STORE_RESULTS } from '../../src/api/operationResults.js';
import { loadOperatorPage } from '../../src/api/operatorPage.js';
import { agentTokenCreate } from '../../src/api/tokens.js';
import { taskClaim } from '../../src/db/sql/claims.js';
import { taskFailAttempt } from '../../src/db/sql/ownerWrites.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import { workflowControl } from '../../src/workflowControl.js';
import { LEASE_MS } from '../helpers/tasks.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { call, pinnedPair, tokenFor } from './helpers.js';

const stack = useTaskStack();
let withTemporal: AgentServer;
let withoutTemporal: AgentServer;
const apis: ReturnType<typeof createAgentApi>[] = [];

beforeAll(async () => {
  const agent = await stack.db.login('baton_agent');
  const page = await loadOperatorPage({});
  const start = async (options: Parameters<typeof createAgentApi>[0]) => {
    const api = createAgentApi(options);
    apis.push(api);
    return startAgentServer(api, { host: '127.0.0.1', port: 0 });
  };
  withTemporal = await start({
    db: agent.pool,
    page,
    workflows: async () => workflowControl(stack.temporal.client, stack.temporal.taskQueue),
  });
  withoutTemporal = await start({ db: agent.pool, page });
});

afterAll(async () => {
  await withTemporal?.close();
  await withoutTemporal?.close();
  for (const api of apis) await api.close();
});

/** Calls `operation` as `token` through the client, and parses its result by the operation's schema. */
async function answer<Op extends keyof typeof STORE_RESULTS>(
  token: string,
  operation: Op,
  input: Record<string, unknown>,
  server: AgentServer = withTemporal,
): Promise<z.infer<(typeof STORE_RESULTS)[Op]>> {
  const answered = (await callAgentApi({ url: server.url, token }, operation, input as never, 30_000)) as Record<string, unknown>;
  // The server adds where Temporal holds their workflows to what the store answers for a task (its workflow's id) or a graph (a list filter).
  const { workflowId, workflowsQuery, ...result } = answered;
  if (operation === 'task.show') expect(workflowId).toMatch(/^baton-task:/);
  if (operation === 'graph.show') expect(workflowsQuery).toMatch(/^WorkflowId STARTS_WITH "baton-task:[^"]+\/"$/);
  const parsed = STORE_RESULTS[operation].safeParse(operation === 'graph.show' || operation === 'task.show' ? result : answered);
  expect(parsed.error?.issues ?? [], `${operation} answered ${JSON.stringify(result)}`).toEqual([]);
  return parsed.data as z.infer<(typeof STORE_RESULTS)[Op]>;
}

/** The refusal `operation` gets as `token`: its HTTP status and code. */
async function refusal(token: string, operation: string, input: Record<string, unknown>, server: AgentServer = withTemporal) {
  const { status, body } = await call(server.url, token, operation, input);
  return { status, code: (body as { code?: string; refusal?: string }).code, detail: (body as { detail?: string }).detail };
}

describe("the operator's views", () => {
  it('answer with exactly the fields their types declare', async () => {
    const { graphId, up, down, fence } = await pinnedPair(stack.db, 'views');
    const worker = await stack.db.login('baton_worker');
    await poolOffer(worker.pool, fence, 'views-pool');
    const reader = (await tokenFor(stack.db, 'views-reader', ['view'])).secret;
    const admin = (await tokenFor(stack.db, 'views-admin', ['admin'])).secret;

    const graphs = await answer(reader, 'graphs.list', { search: graphId.slice(-6) });
    expect(graphs.map((g) => g.id)).toEqual([graphId]);
    expect(graphs[0]!.counts).toMatchObject({ verified: 1, running: 1 });
    expect(await answer(reader, 'graphs.list', { state: 'verified', search: graphId })).toEqual([]);

    const graph = await answer(reader, 'graph.show', { graphId });
    expect(graph.tasks.map((t) => [t.key, t.status, t.dependsOn])).toEqual([
      ['down', 'running', ['up']],
      ['up', 'verified', []],
    ]);
    const task = await answer(reader, 'task.show', { taskId: up });
    expect(task.verifications).toMatchObject([{ passed: true, command: 'check', verifier: 'verifier' }]);
    expect(task.notes.map((n) => n.body)).toEqual(['the upstream found a bug in the parser']);
    expect(task.events.map((e) => e.kind)).toEqual(['created', 'claimed', 'submitted', 'verification_started', 'verified']);
    expect((await answer(reader, 'task.show', { taskId: down })).upstreamRevisions).toEqual({ up: 'a'.repeat(40) });

    const before = await answer(reader, 'events.list', {});
    expect(before.events).toEqual([]);
    const key = uniqueObjectKey('views');
    await callAgentApi({ url: withTemporal.url, token: admin }, 'object.create', { key, content: 'v1', defaultAccess: 'view' }, 30_000);
    const after = await answer(reader, 'events.list', { afterId: before.lastId, waitSeconds: 5 });
    expect(after.events.map((e) => [e.subjectKind, e.subjectId, e.kind])).toEqual([['object', key, 'created']]);
    expect(after.lastId).toBe(after.events.at(-1)!.id);

    const objects = await answer(reader, 'objects.list', { key });
    expect(objects.objects).toMatchObject([{ key, holder: null, offer: null, suggestions: [] }]);
    expect(objects.log!.map((e) => e.kind)).toEqual(['created']);
    const pools = await answer(reader, 'pools.list', {});
    expect(pools.find((p) => p.pool === 'views-pool')).toMatchObject({ waiting: [{ taskId: down }], running: [] });
    const tokens = await answer(admin, 'tokens.list', {});
    expect(tokens.tokens.map((t) => t.identity)).toEqual(expect.arrayContaining(['views-reader', 'views-admin']));
  });

  it('are refused to an agent’s token: read is what an agent reads of its own work, view is the whole deployment', async () => {
    const { graphId } = await pinnedPair(stack.db, 'agentish');
    const agentish = (await tokenFor(stack.db, 'agentish', ['read', 'notes', 'objects', 'submit'])).secret;
    for (const [operation, input] of [
      ['graphs.list', {}],
      ['graph.show', { graphId }],
      ['task.show', { taskId: `${graphId}/up` }],
      ['events.list', {}],
      ['pools.list', {}],
    ] as const) {
      expect(await refusal(agentish, operation, input), operation).toMatchObject({ status: 403, code: 'forbidden' });
    }
    expect((await refusal(agentish, 'graphs.list', {})).detail).toContain('needs view');
    // U11: the objects it may view are its to list (read), as each is its to show.
    expect(await answer(agentish, 'objects.list', {})).toMatchObject({ objects: expect.any(Array) });
  });

  it("are refused to a run's token and to a token limited to some notes, even with the view scope, and the refusal is recorded", async () => {
    const { graphId, fence } = await pinnedPair(stack.db, 'limited');
    const worker = await stack.db.login('baton_worker');
    await poolOffer(worker.pool, fence, 'limited-pool');
    const taker = (await tokenFor(stack.db, 'limited-taker', ['read', 'submit'])).secret;
    const run = (await callAgentApi({ url: withTemporal.url, token: taker }, 'pool.claim', { pool: 'limited-pool' }, 30_000))!;
    const client = await stack.db.login('baton_client');
    const granted = (
      await agentTokenCreate(client.pool, {
        identity: 'limited-notes',
        scopes: ['view', 'read', 'notes'],
        createdBy: 'op',
        noteGrants: { graphs: [graphId] },
      })
    ).secret;
    for (const [token, who] of [
      [run.runToken, 'its run of task'],
      [granted, 'the notes it was granted'],
    ] as const) {
      for (const operation of ['graphs.list', 'graph.show', 'task.show', 'events.list', 'pools.list']) {
        const input = operation === 'graph.show' ? { graphId } : operation === 'task.show' ? { taskId: fence.taskId } : {};
        const refused = await refusal(token, operation, input);
        expect(refused, operation).toMatchObject({ status: 403, code: 'forbidden' });
        expect(refused.detail).toContain(who);
      }
    }
    const admin = (await tokenFor(stack.db, 'limited-admin', ['admin'])).secret;
    const recorded = await answer(admin, 'events.list', { afterId: 0, limit: 1000 });
    expect(recorded.events.filter((e) => e.kind === 'api_refused' && e.details.refusal === 'limited').map((e) => e.actor)).toEqual(
      expect.arrayContaining(['limited-taker', 'limited-notes']),
    );
  });

  it('show a reader only the objects it may view, and no refused calls of agents', async () => {
    const admin = (await tokenFor(stack.db, 'seen-admin', ['admin'])).secret;
    const reader = (await tokenFor(stack.db, 'seen-reader', ['view'])).secret;
    const open = uniqueObjectKey('open');
    const secret = uniqueObjectKey('private');
    const before = (await answer(reader, 'events.list', {})).lastId;
    for (const [key, defaultAccess] of [
      [open, 'view'],
      [secret, 'none'],
    ] as const) {
      await callAgentApi({ url: withTemporal.url, token: admin }, 'object.create', { key, defaultAccess, content: 'x' }, 30_000);
    }
    // A refused call of the reader's own: an agent event the reader may not read back.
    expect((await refusal(reader, 'tokens.list', {})).status).toBe(403);

    const listed = (await answer(reader, 'objects.list', {})).objects.map((o) => o.key);
    expect(listed).toContain(open);
    expect(listed).not.toContain(secret);
    // One it may not view answers as one that does not exist.
    expect(await refusal(reader, 'objects.list', { key: secret })).toMatchObject({ status: 404 });
    expect(await refusal(reader, 'objects.list', { key: uniqueObjectKey('never') })).toMatchObject({ status: 404 });
    const seen = (await answer(reader, 'events.list', { afterId: before, limit: 1000 })).events;
    expect(seen.map((e) => e.subjectId)).toContain(open);
    expect(seen.map((e) => e.subjectId)).not.toContain(secret);
    expect(seen.filter((e) => e.subjectKind === 'agent')).toEqual([]);
    // The admin sees both, and the refusal.
    const all = (await answer(admin, 'events.list', { afterId: before, limit: 1000 })).events;
    expect(all.map((e) => e.subjectId)).toEqual(expect.arrayContaining([open, secret, 'seen-reader']));
    expect((await answer(admin, 'objects.list', {})).objects.map((o) => o.key)).toEqual(expect.arrayContaining([open, secret]));
  });

  it('never show a secret: not in the tokens view, not in any answer', async () => {
    const made = await tokenFor(stack.db, 'keeper', ['read']);
    const admin = (await tokenFor(stack.db, 'keeper-admin', ['admin'])).secret;
    const text = JSON.stringify(await answer(admin, 'tokens.list', {}));
    expect(text).toContain(made.token.id);
    expect(text).not.toContain(made.secret);
    expect(text, text).not.toMatch(/"secret|sha256"/i);
  });
});

describe("the operator's actions", () => {
  it('need the admin scope; are recorded under the token’s identity with the reason; rerun sends a failed task round again', async () => {
    const graphId = `actions-${Date.now().toString(36)}`;
    const { insertGraph } = await import('../../src/testkit/graphs.js');
    const id = await insertGraph(stack.db.pool, { a: [], b: ['a'] }, { prefix: graphId });
    const reader = (await tokenFor(stack.db, 'act-reader', ['view', 'read', 'notes', 'objects', 'submit'])).secret;
    const admin = (await tokenFor(stack.db, 'act-admin', ['admin'])).secret;
    expect(await refusal(reader, 'task.cancel', { taskId: `${id}/a`, reason: 'not mine' })).toMatchObject({
      status: 403,
      code: 'forbidden',
    });
    expect(await refusal(admin, 'task.cancel', { taskId: `${id}/a` })).toMatchObject({ status: 400 });
    expect((await answer(reader, 'task.show', { taskId: `${id}/a` })).status).toBe('ready');

    // A failed task, sent round again.
    const claim = (await taskClaim(stack.db.pool, `${id}/a`, 'w-1', LEASE_MS))!;
    await taskFailAttempt(stack.db.pool, { taskId: `${id}/a`, owner: 'w-1', claimVersion: claim.claimVersion }, 'broke', false);
    expect(await call(withTemporal.url, admin, 'task.rerun', { taskId: `${id}/a`, reason: 'the mirror is fixed' })).toMatchObject({
      status: 200,
      body: { taskId: `${id}/a` },
    });
    const rerun = await answer(admin, 'task.show', { taskId: `${id}/a` });
    expect(rerun).toMatchObject({ status: 'ready', attempts: 0 });
    expect(rerun.events.at(-1)).toMatchObject({ kind: 'rerun_requested', actor: 'act-admin', reason: 'the mirror is fixed' });
    // Its workflow was started on the workers' task queue.
    const started = await stack.temporal.client.workflow.getHandle(`baton-task:${id}/a`).describe();
    expect(started.taskQueue).toBe(stack.temporal.taskQueue);
    await stack.temporal.client.workflow.getHandle(`baton-task:${id}/a`).terminate('test over');

    const cancelled = await answer(admin, 'graph.cancel', { graphId: id, reason: 'wrong branch' });
    expect(cancelled).toEqual({ cancelled: [`${id}/a`, `${id}/b`], left: [] });
    const again = await answer(admin, 'graph.cancel', { graphId: id, reason: 'wrong branch' });
    expect(again).toEqual({
      cancelled: [],
      left: [
        { taskId: `${id}/a`, status: 'cancelled' },
        { taskId: `${id}/b`, status: 'cancelled' },
      ],
    });
    const events = (await answer(admin, 'task.show', { taskId: `${id}/b` })).events;
    expect(events.filter((e) => e.kind === 'cancelled')).toMatchObject([{ actor: 'act-admin', reason: 'wrong branch' }]);
  });

  it('are refused, with nothing recorded, by a server that reaches no Temporal; its tools list leaves them out', async () => {
    const { insertGraph } = await import('../../src/testkit/graphs.js');
    const id = await insertGraph(stack.db.pool, { only: [] }, { prefix: 'no-temporal' });
    const admin = (await tokenFor(stack.db, 'nt-admin', ['admin'])).secret;
    const refused = await refusal(admin, 'task.cancel', { taskId: `${id}/only`, reason: 'try' }, withoutTemporal);
    expect(refused).toMatchObject({ status: 403 });
    expect(refused.detail).toContain('Temporal');
    const task = await answer(admin, 'task.show', { taskId: `${id}/only` }, withoutTemporal);
    expect(task.status).toBe('ready');
    expect(task.events.map((e) => e.kind)).not.toContain('cancelled');
    const { listAgentTools } = await import('../../src/api/agentClient.js');
    const tools = await listAgentTools({ url: withoutTemporal.url, token: admin }, 30_000);
    expect(tools.some((name) => /cancel|rerun/.test(name))).toBe(false);
    expect(tools.some((name) => /graphs/.test(name))).toBe(true);
  });
});

describe("the page's files", () => {
  it('carry a policy that runs only their own scripts, and no path reaches outside them', async () => {
    const index = await fetch(`${withTemporal.url}/ui/`);
    expect(index.status).toBe(200);
    const policy = index.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    expect(await index.text()).not.toMatch(/<script>(?!<)/);
    expect((await fetch(`${withTemporal.url}/`, { redirect: 'manual' })).headers.get('location')).toBe('/ui/');
    // Sent as written (fetch would resolve the dots first).
    const { hostname, port } = new URL(withTemporal.url);
    for (const path of [
      '/ui/../package.json',
      '/ui/%2e%2e/package.json',
      '/ui/assets/../../package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui//etc/passwd',
    ]) {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get({ hostname, port, path }, (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          })
          .on('error', reject);
      });
      expect(status, path).toBe(404);
      expect(body).not.toContain('@batonhq/baton');
      expect(body).not.toContain('root:');
    }
    const config = await (await fetch(`${withTemporal.url}/ui/config.json`)).json();
    expect(config).toEqual({});
    // The agent API's own routes are not the page's.
    expect((await fetch(`${withTemporal.url}/healthz`)).status).toBe(200);
    await expect(callAgentApi({ url: withTemporal.url, token: 'baton_x' }, 'graphs.list', {}, 30_000)).rejects.toBeInstanceOf(
      AgentApiError,
    );
  });
});
