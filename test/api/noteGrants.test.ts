// S6: notes are read and written by grant (issue 19). A run token, a command run's or a pooled
// run's, reads and writes its own task's notes and reads those of the upstream tasks its task is
// pinned to; a token people made reads and writes the notes of the graphs and tasks it was granted,
// or every task's without a grant. Anything else is refused (403, `not_granted`) and recorded.
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentApi } from '../../src/api/agentApi.js';
import { newTokenSecret, secretSha256 } from '../../src/api/tokenSecret.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { agentTokenCreate, agentTokenList } from '../../src/api/tokens.js';
import { taskNoteAdd } from '../../src/db/sql/ownerWrites.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import { runTokenIssue } from '../../src/db/sql/tokens.js';
import { taskClaim } from '../../src/db/sql/claims.js';
import { NotFoundError } from '../../src/errors.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { LEASE_MS } from '../helpers/tasks.js';
import { call, pinnedPair, tokenFor, useAgentServer } from './helpers.js';

const db = useTestDatabase();
const serve = useAgentServer(() => db);
const servers: AgentServer[] = [];

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/**
 * Two graphs: `up` (verified, with a note) and `down` (pinned to `up`, claimed by worker w-1) in
 * one, and `other` (with a note nobody outside it may read) in the other.
 */
async function scenario() {
  const pair = await pinnedPair(db, 'notes');
  const otherGraphId = await insertGraph(db.pool, { other: [] }, { prefix: 'notes-other' });
  const other = `${otherGraphId}/other`;
  await taskNoteAdd(db.pool, other, 'other-agent', 'a secret of another graph');
  return { ...pair, otherGraphId, other };
}

/** A command run's endpoint and token, as activities/tasks.ts makes them: on the worker's login, the token bound to the claim. */
async function commandRun(fence: { taskId: string; owner: string; claimVersion: number }, identity: string) {
  const worker = await db.login('baton_worker');
  const token = newTokenSecret();
  await runTokenIssue(worker.pool, fence, identity, secretSha256(token));
  const api = createAgentApi({
    db: worker.pool,
    localRun: { taskId: fence.taskId, claimVersion: fence.claimVersion, reportProgress: () => {} },
  });
  const server = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
  servers.push(server);
  return { url: server.url, token };
}

const bodies = async (taskId: string) =>
  (await db.pool.query('SELECT body FROM baton.task_notes WHERE task_id = $1 ORDER BY id', [taskId])).rows.map((r) => r.body as string);

async function refusals(identity: string) {
  const { rows } = await db.pool.query(
    `SELECT details FROM baton.events WHERE subject_kind = 'agent' AND subject_id = $1 AND kind = 'api_refused' ORDER BY subject_seq`,
    [identity],
  );
  return rows.map((r) => `${r.details.operation}:${r.details.refusal}:${r.details.requested_task_id ?? ''}`);
}

describe('notes by grant (S6)', () => {
  it("lets a command run's token read and write its own task's notes and read its upstream's, and refuses every other task's, recording each refusal", async () => {
    const { up, down, other, fence } = await scenario();
    const endpoint = await commandRun(fence, 'down-agent');

    expect(await call(endpoint.url, endpoint.token, 'note.add', { text: 'starting on the parser' })).toMatchObject({
      status: 200,
      body: { author: 'down-agent', body: 'starting on the parser' },
    });
    expect((await call(endpoint.url, endpoint.token, 'notes.list')).body.map((n: { body: string }) => n.body)).toEqual([
      'starting on the parser',
    ]);
    const upstream = await call(endpoint.url, endpoint.token, 'notes.list', { taskId: up });
    expect(upstream.status).toBe(200);
    expect(upstream.body.map((n: { body: string }) => n.body)).toEqual(['the upstream found a bug in the parser']);

    const refused: [string, Record<string, unknown>, RegExp][] = [
      ['notes.list', { taskId: other }, /reads the notes of its own task .* and of the upstream tasks it is pinned to/],
      ['notes.list', { taskId: 'no-such/task' }, /not of task no-such\/task/],
      ['note.add', { text: 'rewriting history upstream', taskId: up }, /writes notes of its own task .* only/],
      ['note.add', { text: 'planting a note elsewhere', taskId: other }, /writes notes of its own task .* only/],
    ];
    for (const [operation, body, detail] of refused) {
      const reply = await call(endpoint.url, endpoint.token, operation, body);
      expect(reply.status, `${operation} ${JSON.stringify(body)}`).toBe(403);
      expect(reply.body).toMatchObject({ code: 'forbidden', refusal: 'not_granted' });
      expect(reply.body.detail).toMatch(detail);
    }
    expect(await bodies(up)).toEqual(['the upstream found a bug in the parser']);
    expect(await bodies(other)).toEqual(['a secret of another graph']);
    expect(await bodies(down)).toEqual(['starting on the parser']);
    expect(await refusals('down-agent')).toEqual([
      `notes.list:not_granted:${other}`,
      'notes.list:not_granted:no-such/task',
      `note.add:not_granted:${up}`,
      `note.add:not_granted:${other}`,
    ]);
  });

  it("holds a pooled run's token, on baton serve, to its own task's notes", async () => {
    const { other } = await scenario();
    const worker = await db.login('baton_worker');
    const graphId = await insertGraph(db.pool, { solo: [] }, { prefix: 'notes-pool' });
    const taskId = `${graphId}/solo`;
    const claim = (await taskClaim(worker.pool, taskId, 'w-2', LEASE_MS))!;
    await poolOffer(worker.pool, { taskId, owner: 'w-2', claimVersion: claim.claimVersion }, 'notes-pool');
    const taker = await tokenFor(db, 'pool-reader', ['read', 'notes', 'submit']);
    const taken = await call(serve.url, taker.secret, 'pool.claim', { pool: 'notes-pool' });
    expect(taken.status).toBe(200);
    const run = taken.body.runToken as string;

    expect((await call(serve.url, run, 'note.add', { text: 'taken' })).status).toBe(200);
    expect((await call(serve.url, run, 'notes.list')).body.map((n: { body: string }) => n.body)).toEqual(['taken']);
    expect(await call(serve.url, run, 'notes.list', { taskId: other })).toMatchObject({
      status: 403,
      body: { code: 'forbidden', refusal: 'not_granted' },
    });
    expect(await call(serve.url, run, 'note.add', { text: 'x', taskId: other })).toMatchObject({
      status: 403,
      body: { code: 'forbidden', refusal: 'not_granted' },
    });
    expect(await bodies(other)).toEqual(['a secret of another graph']);
    expect(await refusals('pool-reader')).toEqual([`notes.list:not_granted:${other}`, `note.add:not_granted:${other}`]);
  });

  it("limits a token people made to the graphs and tasks it was granted, lists the grants, and leaves a token without grants an operator's", async () => {
    const { graphId, up, down, other, otherGraphId } = await scenario();
    const client = await db.login('baton_client');
    const make = (identity: string, noteGrants?: { graphs?: string[]; tasks?: string[] }) =>
      agentTokenCreate(client.pool, { identity, scopes: ['read', 'notes'], createdBy: 'operator', noteGrants });
    const graphReader = await make('graph-reader', { graphs: [graphId] });
    const taskReader = await make('task-reader', { tasks: [other] });
    const operator = await make('operator-bot');

    // Granted a graph: every task of it, no other.
    for (const taskId of [up, down]) expect((await call(serve.url, graphReader.secret, 'notes.list', { taskId })).status).toBe(200);
    expect((await call(serve.url, graphReader.secret, 'note.add', { text: 'reviewed', taskId: down })).status).toBe(200);
    const denied = await call(serve.url, graphReader.secret, 'notes.list', { taskId: other });
    expect(denied).toMatchObject({ status: 403, body: { code: 'forbidden', refusal: 'not_granted' } });
    expect(denied.body.detail).toMatch(
      new RegExp(`may read and write the notes of graph ${graphId} only, not of task ${other.replace('/', '\\/')}`),
    );
    expect(await call(serve.url, graphReader.secret, 'note.add', { text: 'x', taskId: other })).toMatchObject({
      status: 403,
      body: { refusal: 'not_granted' },
    });
    // Granted a task: that task alone.
    expect((await call(serve.url, taskReader.secret, 'notes.list', { taskId: other })).body.map((n: { body: string }) => n.body)).toEqual([
      'a secret of another graph',
    ]);
    expect(await call(serve.url, taskReader.secret, 'notes.list', { taskId: up })).toMatchObject({
      status: 403,
      body: { refusal: 'not_granted' },
    });
    // No grant: every task's notes, as before grants existed.
    for (const taskId of [up, other]) expect((await call(serve.url, operator.secret, 'notes.list', { taskId })).status).toBe(200);
    expect(await bodies(other)).toEqual(['a secret of another graph']);
    expect(await refusals('graph-reader')).toEqual([`notes.list:not_granted:${other}`, `note.add:not_granted:${other}`]);
    expect(await refusals('task-reader')).toEqual([`notes.list:not_granted:${up}`]);

    const listed = await agentTokenList(client.pool);
    expect(listed.find((t) => t.id === graphReader.token.id)).toMatchObject({ noteGrants: { graphs: [graphId], tasks: [] } });
    expect(listed.find((t) => t.id === taskReader.token.id)).toMatchObject({ noteGrants: { graphs: [], tasks: [other] } });
    expect(listed.find((t) => t.id === operator.token.id)).toMatchObject({ noteGrants: null });
    expect((await call(serve.url, graphReader.secret, 'whoami')).body).toMatchObject({ noteGrants: { graphs: [graphId], tasks: [] } });
    // A grant names what exists: a misspelt graph or task is refused, not a token that reaches nothing.
    await expect(make('typo', { graphs: [`${otherGraphId}-typo`] })).rejects.toBeInstanceOf(NotFoundError);
    await expect(make('typo', { tasks: [`${other}-typo`] })).rejects.toBeInstanceOf(NotFoundError);
  });
});
