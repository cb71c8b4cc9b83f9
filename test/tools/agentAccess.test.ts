import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentApi } from '../../src/api/agentApi.js';
import { newTokenSecret, secretSha256 } from '../../src/api/tokenSecret.js';
import { AGENT_TOKEN_ENV, AGENT_URL_ENV, startAgentServer } from '../../src/api/agentServer.js';
import type { Fence } from '../../src/db/storeCall.js';
import { eventRead, toolCallRead } from '../../src/db/sql/reads.js';
import { runTokenIssue } from '../../src/db/sql/tokens.js';
import { createObject, grantObjectAccess, takeObject, writeObject } from '../../src/objects/objectStore.js';
import { git } from '../../src/runners/git.js';
import { commitAll, createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import { spawnToolServer, type ToolServerProcess } from '../../src/testkit/toolServerProcess.js';
import { createHttpTool } from '../../src/tools/httpTool.js';
import { parseHttpTools } from '../../src/tools/httpToolsConfig.js';
import { createToolGateway, type ToolGateway } from '../../src/tools/toolGateway.js';
import type { ToolAdapter } from '../../src/tools/types.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { reclaim, runningTask } from '../helpers/tools.js';
import { tokenFor } from '../api/helpers.js';

let tool: ToolServerProcess;
let tools: Record<string, ToolAdapter>;
let gateway: ToolGateway;
let repo: string;
const workDir = path.join(tmpdir(), `baton-tools-test-${randomUUID().slice(0, 8)}`);

// Credentials the worker holds; the agent must see none of them.
const WORKER_SECRETS = {
  DATABASE_URL: 'postgresql://worker:secret@db/baton',
  PGPASSWORD: 'secret',
  TEMPORAL_API_KEY: 'secret',
  BATON_HTTP_TOOLS: '{}',
};

beforeAll(async () => {
  tool = await spawnToolServer();
  repo = await createScriptedRepo();
  tools = { payments: createHttpTool({ url: `${tool.url}/effects`, lookupUrl: `${tool.url}/effects/{key}`, timeoutMs: 2_000 }) };
});

afterAll(async () => {
  await tool?.stop();
  await rm(repo, { recursive: true, force: true });
  await rm(workDir, { recursive: true, force: true });
});

const stack = useTaskStack({
  worker: () => ({
    tools,
    workDir,
    agentFunctions: {
      // Asks twice, as an agent retrying after an error would: the second answer comes from the ledger.
      charge: async (ctx) => {
        const first = await ctx.callTool!({ tool: 'payments', step: 'charge', params: { amount: 5 } });
        const again = await ctx.callTool!({ tool: 'payments', step: 'charge', params: { amount: 5 } });
        const id = (again.result as { id: string }).id;
        if (again.sentNow !== 0 || (first.result as { id: string }).id !== id) throw new Error('charged twice');
        return { revision: `charge-${id}`, testCommand: 'none', agentResult: { exitCode: 0, outputDigest: 'x' } };
      },
    },
    verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'x', outputTail: '' }) },
  }),
});

beforeAll(() => {
  gateway = createToolGateway({ db: stack.db.pool, tools });
  Object.assign(process.env, WORKER_SECRETS);
});

/** The identity a run token of these tests carries (a worker uses the task's `run.agent`, else the task id). */
const RUN_AGENT = 'run-agent';

/**
 * The endpoint a worker gives the run holding `fence`, as activities/tasks.ts makes it: a run token
 * issued through the store on the worker's login and bound to the claim, and the agent API on that
 * login, whose tool calls go through the gateway fenced on the claim.
 */
async function runEndpoint(fence: Fence) {
  const worker = await stack.db.login('baton_worker');
  const token = newTokenSecret();
  await runTokenIssue(worker.pool, fence, RUN_AGENT, secretSha256(token));
  const api = createAgentApi({
    db: worker.pool,
    localRun: {
      taskId: fence.taskId,
      claimVersion: fence.claimVersion,
      callTool: (call) => gateway.call(fence, call, RUN_AGENT),
      reportProgress: () => {},
    },
  });
  const server = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
  return { url: server.url, token, env: { [AGENT_URL_ENV]: server.url, [AGENT_TOKEN_ENV]: token }, close: () => server.close() };
}

afterAll(() => {
  for (const name of Object.keys(WORKER_SECRETS)) delete process.env[name];
});

describe('agent access to the tool gateway', () => {
  it('lets a command agent call a tool for its own task and claim with `baton tool call`, with no database credentials', async () => {
    const client = stack.client;
    const graph = await client.submitGraph(
      {
        id: `tools-${randomUUID().slice(0, 8)}`,
        repo,
        policy: { heartbeatTimeoutMs: 10_000, maxAttempts: 1 },
        tasks: [
          {
            key: 'pr',
            run: {
              command: [
                `baton tool call payments open-pr --params '{"title":"v2 API"}' > pr.json`,
                'env | cut -d= -f1 | sort > env-names.txt',
                commitAll('open the PR'),
              ].join(' && '),
            },
            verify: { command: 'test -s pr.json' },
          },
        ],
      },
      'test',
    );
    const outcome = await client.waitForGraph(graph.id);
    const taskId = `${graph.id}/pr`;
    expect(outcome.verified).toEqual([taskId]);
    const task = await client.task(taskId);
    const [row] = await toolCallRead(stack.db.pool, taskId);
    expect(row).toMatchObject({
      key: `${taskId}:open-pr`,
      status: 'succeeded',
      owner: stack.worker.identity,
      claimVersion: 1,
      attempts: 1,
    });
    const pr = JSON.parse(await git(repo, ['show', `${task.artifact!.revision}:pr.json`]));
    expect(pr).toMatchObject({
      key: `${taskId}:open-pr`,
      status: 'succeeded',
      result: { key: `${taskId}:open-pr`, params: { title: 'v2 API' } },
    });
    const envNames = (await git(repo, ['show', `${task.artifact!.revision}:env-names.txt`])).split('\n');
    expect(envNames).toEqual(expect.arrayContaining(['BATON_URL', 'BATON_TOKEN', 'BATON_CLAIM']));
    for (const secret of Object.keys(WORKER_SECRETS)) expect(envNames).not.toContain(secret);
    expect((await tool.effects()).filter((e) => e.key === `${taskId}:open-pr`)).toHaveLength(1);
    const listed = await runCli(['tool', 'list', graph.id], cleanEnv({ DATABASE_URL: stack.db.url }));
    expect(listed.code, listed.output).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${taskId}:open-pr +payments +succeeded +sent  1x  ${stack.worker.identity}@v1`));
  });

  it('gives a function agent ctx.callTool, bound to its own claim', async () => {
    const client = stack.client;
    const graph = await client.submitGraph(
      { id: `toolf-${randomUUID().slice(0, 8)}`, tasks: [{ key: 'pay', run: { function: 'charge' }, verify: { function: 'pass' } }] },
      'test',
    );
    const taskId = `${graph.id}/pay`;
    expect((await client.waitForGraph(graph.id)).verified).toEqual([taskId]);
    expect((await toolCallRead(stack.db.pool, taskId))[0]).toMatchObject({
      status: 'succeeded',
      owner: stack.worker.identity,
      attempts: 1,
    });
    expect((await tool.effects()).filter((e) => e.key === `${taskId}:charge`)).toHaveLength(1);
  });

  it("refuses a wrong token, another run's token, a token that is not a run's, and any attempt to name a task, owner or claim", async () => {
    const fence = await runningTask(stack.db.pool);
    const other = await runningTask(stack.db.pool);
    const endpoint = await runEndpoint(fence);
    const otherEndpoint = await runEndpoint(other);
    const apiToken = await tokenFor(stack.db, 'someone', ['read', 'notes', 'objects', 'submit', 'admin']);
    try {
      const post = (token: string, body: unknown) =>
        fetch(`${endpoint.url}/v1/tool.call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const guessed = await post('guess', { tool: 'payments', step: 's', params: {} });
      expect(guessed.status).toBe(401);
      expect(guessed.headers.get('content-type')).toBe('application/problem+json');
      expect(await guessed.json()).toMatchObject({ code: 'unauthenticated', refusal: 'unauthenticated' });
      // A run token is good only on its own run's endpoint: the other run's token is refused here.
      const stolen = await post(otherEndpoint.token, { tool: 'payments', step: 's', params: {} });
      expect(stolen.status).toBe(403);
      expect(await stolen.json()).toMatchObject({ code: 'forbidden', refusal: 'other_run' });
      // Even an admin token is not a run's: tool calls need a run token.
      const notRun = await post(apiToken.secret, { tool: 'payments', step: 's', params: {} });
      expect(notRun.status).toBe(403);
      expect(await notRun.json()).toMatchObject({ code: 'forbidden', refusal: 'not_a_run' });
      const named = await post(endpoint.token, { tool: 'payments', step: 's', params: {}, taskId: 'other/task', claimVersion: 9 });
      expect(named.status).toBe(400);
      expect(await named.json()).toMatchObject({
        code: 'invalid_input',
        detail: expect.stringMatching(/unexpected field\(s\) taskId, claimVersion/),
      });
      const owner = await post(endpoint.token, { tool: 'payments', step: 's', params: {}, owner: 'owner-b' });
      expect(owner.status).toBe(400);
      expect(await owner.json()).toMatchObject({
        detail: expect.stringMatching(/unexpected field\(s\) owner: the actor is always the token's identity/),
      });
      expect(await toolCallRead(stack.db.pool, fence.taskId)).toEqual([]);
      expect(await toolCallRead(stack.db.pool, other.taskId)).toEqual([]);
      // The same endpoint with its own token does make the call: the refusals above were not for want of a working endpoint.
      const own = await post(endpoint.token, { tool: 'payments', step: 's', params: {} });
      expect(own.status, await own.clone().text()).toBe(200);
      expect(await toolCallRead(stack.db.pool, fence.taskId)).toEqual([
        expect.objectContaining({ key: `${fence.taskId}:s`, status: 'succeeded', owner: fence.owner }),
      ]);
    } finally {
      await endpoint.close();
      await otherEndpoint.close();
    }
  });

  it("refuses a stale claim's call through the CLI (exit 3) and logs the refusal", async () => {
    const old = await runningTask(stack.db.pool);
    const endpoint = await runEndpoint(old);
    try {
      await reclaim(stack.db.pool, old, 'owner-b');
      const result = await runCli(['tool', 'call', 'payments', 'charge', '--params', '{"amount":5}'], cleanEnv(endpoint.env));
      expect(result.code, result.output).toBe(3);
      expect(result.output).toMatch(/tool\.call refused \(stale_claim\): tool\.call refused for task/);
      const refusal = (await eventRead(stack.db.pool, 'task', old.taskId)).find((e) => e.kind === 'stale_write_refused');
      expect(refusal).toMatchObject({ actor: RUN_AGENT, fence: 1, details: { action: 'tool.call' } });
      expect(await toolCallRead(stack.db.pool, old.taskId)).toEqual([]);
    } finally {
      await endpoint.close();
    }
  });

  it('sends a call only while the objects it --expects are at their versions: exit 3 and nothing sent once one moved', async () => {
    const fence = await runningTask(stack.db.pool);
    const plan = `plan-${randomUUID().slice(0, 8)}`;
    await createObject(stack.db.pool, 'A', { key: plan, content: 'v1' });
    await grantObjectAccess(stack.db.pool, 'A', { key: plan, grantee: RUN_AGENT, access: 'view' });
    const { token } = await takeObject(stack.db.pool, 'A', { key: plan });
    await writeObject(stack.db.pool, 'A', { key: plan, version: 1, token, content: 'v2' });
    const endpoint = await runEndpoint(fence);
    const call = (expect: string) =>
      runCli(['tool', 'call', 'payments', 'charge', '--params', '{"amount":5}', '--expect', expect], cleanEnv(endpoint.env));
    try {
      const moved = await call(`${plan}@1`);
      expect(moved.code, moved.output).toBe(3);
      expect(moved.output).toMatch(/\(stale_view\):.* is at version 2, not 1 as the call expected; nothing was sent/);
      expect(await toolCallRead(stack.db.pool, fence.taskId)).toEqual([]);
      expect((await tool.effects()).filter((e) => e.key.startsWith(fence.taskId))).toEqual([]);

      const malformed = await call(plan);
      expect(malformed.code, malformed.output).toBe(2);
      expect(malformed.output).toMatch(/--expect .*: give an object and the version you read, as key@version/);

      const current = await call(`${plan}@2`);
      expect(current.code, current.output).toBe(0);
      expect((await tool.effects()).filter((e) => e.key.startsWith(fence.taskId))).toHaveLength(1);
    } finally {
      await endpoint.close();
    }
  });

  it('tells a caller what went wrong: unknown tool (exit 2), no endpoint (exit 1)', async () => {
    const fence = await runningTask(stack.db.pool);
    const endpoint = await runEndpoint(fence);
    try {
      const unknown = await runCli(['tool', 'call', 'mailer', 'send'], cleanEnv(endpoint.env));
      expect(unknown.code).toBe(2);
      expect(unknown.output).toMatch(/no tool 'mailer' is configured on this worker \(configured: payments\)/);
    } finally {
      await endpoint.close();
    }
    const missing = await runCli(['tool', 'call', 'payments', 'send'], cleanEnv({}));
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/BATON_URL and BATON_TOKEN are not set: inside a run the runner sets them/);
  });

  it('reads HTTP tools from BATON_HTTP_TOOLS and names what is wrong', () => {
    const tools = parseHttpTools(
      '{"payments":{"url":"http://127.0.0.1:1/x","lookupUrl":"http://127.0.0.1:1/x/{key}","idempotent":true,"ratePerMinute":60}}',
    );
    expect(Object.keys(tools)).toEqual(['payments']);
    expect(tools.payments!.idempotent).toBe(true);
    expect(tools.payments!.ratePerMinute).toBe(60);
    expect(() => parseHttpTools('{"pay":{"url":"http://x","ratePerMinute":0.5}}')).toThrow(/pay.ratePerMinute must be a positive integer/);
    expect(typeof tools.payments!.lookup).toBe('function');
    expect(() => parseHttpTools('{')).toThrow(/BATON_HTTP_TOOLS is not JSON/);
    expect(() => parseHttpTools('{"Pay":{"url":"http://x"}}')).toThrow(/tool name/);
    expect(() => parseHttpTools('{"pay":{"lookupUrl":"http://x/{key}"}}')).toThrow(/pay.url is required/);
    expect(() => parseHttpTools('{"pay":{"url":"http://x","lookup":"http://x"}}')).toThrow(/unknown option\(s\) lookup/);
    expect(() => parseHttpTools('{"pay":{"url":"http://x","lookupUrl":"http://x/y"}}')).toThrow(/must contain \{key\}/);
    expect(() => parseHttpTools('{"pay":{"url":"ftp://x"}}')).toThrow(/must be http or https/);
  });
});
