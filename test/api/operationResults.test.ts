// The results the store writes as JSON itself match the types `callAgentApi` gives them
// (src/api/operationResults.ts): every such operation is called through the client against a real
// server, and its answer parsed by its schema, which refuses a field it does not declare as
// strictly as one missing or of another type. The other operations' results are typed where they
// are made (object states, tool calls).
import { expect, it } from 'vitest';
import type { z } from 'zod';
import { callAgentApi, type AgentEndpoint } from '../../src/api/agentClient.js';
import { STORE_RESULTS } from '../../src/api/operationResults.js';
import { agentTokenCreate } from '../../src/api/tokens.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import type { ObjectEvent } from '../../src/objects/types.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { pinnedPair, tokenFor, useAgentServer } from './helpers.js';

const db = useTestDatabase();
const serve = useAgentServer(() => db);

/** Calls `operation` as `token` through the client, and parses its result by the operation's schema. */
async function answer<Op extends keyof typeof STORE_RESULTS>(
  token: string,
  operation: Op,
  input: Record<string, unknown>,
): Promise<z.infer<(typeof STORE_RESULTS)[Op]>> {
  const endpoint: AgentEndpoint = { url: serve.url, token };
  const result: unknown = await callAgentApi(endpoint, operation, input as never, 30_000);
  const parsed = STORE_RESULTS[operation].safeParse(result);
  expect(
    parsed.error?.issues ?? [],
    `${operation} answered ${JSON.stringify(result, (k, v) => (k === 'runToken' ? '(secret)' : v))}`,
  ).toEqual([]);
  return parsed.data as z.infer<(typeof STORE_RESULTS)[Op]>;
}

it('answers each operation whose result the store writes with exactly the fields its type declares', async () => {
  const { up, down, fence } = await pinnedPair(db, 'results');
  const worker = await db.login('baton_worker');
  await poolOffer(worker.pool, fence, 'results');
  const operator = await tokenFor(db, 'results-operator', ['read', 'notes', 'objects', 'submit']);
  const client = await db.login('baton_client');
  const granted = await agentTokenCreate(client.pool, {
    identity: 'results-granted',
    scopes: ['read', 'notes'],
    createdBy: 'operator',
    noteGrants: { tasks: [up] },
  });

  expect(await answer(operator.secret, 'whoami', {})).toMatchObject({ identity: 'results-operator', taskId: null, noteGrants: null });
  expect((await answer(granted.secret, 'whoami', {})).noteGrants).toEqual({ graphs: [], tasks: [up] });
  expect(await answer(operator.secret, 'note.add', { taskId: up, text: 'seen by the operator' })).toMatchObject({
    author: 'results-operator',
    claimVersion: null,
  });
  expect((await answer(operator.secret, 'notes.list', { taskId: up })).map((n) => n.body)).toEqual([
    'the upstream found a bug in the parser',
    'seen by the operator',
  ]);

  expect(await answer(operator.secret, 'pool.claim', { pool: 'empty-pool' })).toBeNull();
  const run = (await answer(operator.secret, 'pool.claim', { pool: 'results' }))!;
  expect(run).toMatchObject({ taskId: down, pool: 'results', upstream: [{ taskId: up, revision: 'a'.repeat(40) }] });
  expect(await answer(run.runToken, 'whoami', {})).toMatchObject({ taskId: down, claimVersion: fence.claimVersion });
  expect((await answer(run.runToken, 'context', {})).upstream[0]!.notes).toHaveLength(2);
  expect(await answer(run.runToken, 'heartbeat', { progress: { step: 1 } })).toMatchObject({ taskId: down, pooled: true });
  expect(await answer(run.runToken, 'note.add', { text: 'done soon' })).toMatchObject({ claimVersion: fence.claimVersion });
  expect(await answer(run.runToken, 'submit', { revision: 'b'.repeat(40) })).toEqual({
    taskId: down,
    claimVersion: fence.claimVersion,
    revision: 'b'.repeat(40),
  });

  const key = uniqueObjectKey('results');
  await callAgentApi({ url: serve.url, token: operator.secret }, 'object.create', { key, content: 'v1' }, 30_000);
  // The log's entries are the object store's ObjectEvent (the compiler checks the assignment).
  const log: ObjectEvent[] = await answer(operator.secret, 'object.log', { key });
  expect(log.map((e) => e.kind)).toContain('created');
});
