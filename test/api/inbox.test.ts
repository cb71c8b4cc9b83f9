// U11: the inbox. Each identity reads, from the event log, what concerns it: offers made to it, its
// offers answered, roles it lost, grants, suggestions on what it holds, its refused calls and (with
// approve) approvals waiting; a cursor loses nothing while it is away, and a long poll answers as
// soon as something arrives.
import { describe, expect, it } from 'vitest';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { awaitApproval } from '../helpers/tasks.js';
import { call, mcpClient, tokenFor, useAgentServer } from './helpers.js';

const db = useTestDatabase();
const api = useAgentServer(() => db);

interface InboxItem {
  id: number;
  kind: string;
  subjectId: string;
  actor: string;
  reason: string | null;
  why: string;
}

/** One read of `secret`'s inbox after `afterId`: its items as [why, kind, subject, actor], and the cursor. */
async function inbox(secret: string, afterId = 0, waitSeconds?: number) {
  const answer = await call(api.url, secret, 'inbox.wait', { afterId, ...(waitSeconds !== undefined && { waitSeconds }) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const items = answer.body.items as InboxItem[];
  return { items, lastId: answer.body.lastId as number, seen: items.map((i) => [i.why, i.kind, i.subjectId, i.actor]) };
}

describe('the inbox (U11)', () => {
  it('tells each identity what concerns it, and nothing that does not', async () => {
    const [alice, bob, carol] = await Promise.all(['inbox-alice', 'inbox-bob', 'inbox-carol'].map((who) => tokenFor(db, who)));
    const key = uniqueObjectKey('inbox/plan');
    const A = (op: string, body: unknown) => call(api.url, alice!.secret, op, body);
    const B = (op: string, body: unknown) => call(api.url, bob!.secret, op, body);
    expect((await A('object.create', { key, content: 'v1' })).status).toBe(200);
    expect((await A('object.grant', { key, grantee: 'inbox-bob', access: 'write' })).status).toBe(200);
    const taken = (await A('object.take', { key })).body;
    const offered = (await A('object.offer', { key, token: taken.token, version: taken.version, successor: 'inbox-bob' })).body;
    expect((await B('object.decline', { key, reason: 'busy with the release' })).status).toBe(200);
    // A write with a token the role has moved past: refused, and alice is told.
    expect((await A('object.write', { key, version: offered.version, token: taken.token - 1, content: 'late' })).status).toBe(409);
    expect((await A('object.offer', { key, token: taken.token, version: taken.version, successor: 'inbox-bob' })).status).toBe(200);
    expect((await B('object.accept', { key, version: taken.version })).status).toBe(200);

    const bobs = await inbox(bob!.secret);
    expect(bobs.seen).toEqual([
      ['granted', 'granted', key, 'inbox-alice'],
      ['offer', 'offered', key, 'inbox-alice'],
      ['offer', 'offered', key, 'inbox-alice'],
    ]);
    const alices = await inbox(alice!.secret);
    expect(alices.seen).toEqual([
      ['offer_answered', 'declined', key, 'inbox-bob'],
      ['refused', 'stale_write_refused', key, 'inbox-alice'],
      ['offer_answered', 'accepted', key, 'inbox-bob'],
    ]);
    expect(alices.items[0]!.reason).toBe('busy with the release');
    // Negative control: an identity with the same scopes that took no part is told nothing of it.
    expect((await inbox(carol!.secret)).items.filter((i) => i.subjectId === key)).toEqual([]);

    // The cursor: nothing already read comes again; a suggestion on what bob now holds does.
    expect((await inbox(bob!.secret, bobs.lastId)).items).toEqual([]);
    expect((await A('object.suggest', { key, baseVersion: taken.version, content: 'v2?', note: 'tighter wording' })).status).toBe(200);
    expect((await inbox(bob!.secret, bobs.lastId)).seen).toEqual([['suggestion', 'suggested', key, 'inbox-alice']]);
    // ...and not to alice, who made it and no longer holds it.
    expect((await inbox(alice!.secret, alices.lastId)).items).toEqual([]);
  });

  it('waits for the first item when asked to (a long poll), over HTTP and MCP', async () => {
    const [alice, bob] = await Promise.all(['poll-alice', 'poll-bob'].map((who) => tokenFor(db, who)));
    const key = uniqueObjectKey('inbox/poll');
    const { lastId } = await inbox(bob!.secret);
    await call(api.url, alice!.secret, 'object.create', { key, defaultAccess: 'write' });
    const taken = (await call(api.url, alice!.secret, 'object.take', { key })).body;
    // Bob waits from his cursor; the offer arrives while he waits, and his wait answers with it.
    const waiting = inbox(bob!.secret, lastId, 20);
    const offer = await call(api.url, alice!.secret, 'object.offer', {
      key,
      token: taken.token,
      version: taken.version,
      successor: 'poll-bob',
    });
    expect(offer.status, JSON.stringify(offer.body)).toBe(200);
    expect((await waiting).seen).toEqual([['offer', 'offered', key, 'poll-alice']]);

    const mcp = await mcpClient(api.url, bob!.secret);
    try {
      const read = await mcp.use('inbox.wait', { afterId: lastId });
      expect(read.items.map((i: InboxItem) => i.kind)).toEqual(['offered']);
    } finally {
      await mcp.client.close();
    }
  });

  it('shows tasks awaiting approval to a token that may decide them, and to no other', async () => {
    const graphId = uniqueGraphId('inbox');
    await graphSubmit(
      db.pool,
      parseGraphSpec({ id: graphId, tasks: [{ key: 'ship', run: { function: 'f' }, verify: { function: 'v', approval: true } }] }),
      'test',
    );
    const taskId = taskIdOf(graphId, 'ship');
    await awaitApproval(db.pool, taskId, 'rev-1');
    const approver = await tokenFor(db, 'inbox-lead', ['read', 'approve']);
    const reader = await tokenFor(db, 'inbox-reader', ['read']);
    expect((await inbox(approver.secret)).seen).toContainEqual(['approval', 'approval_requested', taskId, 'verifier']);
    expect((await inbox(reader.secret)).items.filter((i) => i.subjectId === taskId)).toEqual([]);
  });

  it('refuses bad input and a made-up token', async () => {
    const token = await tokenFor(db, 'inbox-x');
    expect((await call(api.url, token.secret, 'inbox.wait', { afterId: -1 })).status).toBe(400);
    expect((await call(api.url, token.secret, 'inbox.wait', { waitSeconds: 31 })).status).toBe(400);
    expect((await call(api.url, token.secret, 'inbox.wait', { identity: 'inbox-alice' })).status).toBe(400);
    expect((await call(api.url, 'baton_madeup', 'inbox.wait', {})).status).toBe(401);
  });
});
