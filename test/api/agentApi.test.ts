import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createAgentApi } from '../../src/api/agentApi.js';
import { mcpToolName } from '../../src/api/agentMcp.js';
import { startAgentServer } from '../../src/api/agentServer.js';
import type { OperationName } from '../../src/api/operationNames.js';
import { OPERATIONS } from '../../src/api/operations.js';
import { agentTokenCreate, agentTokenRevoke } from '../../src/api/tokens.js';
import { taskClaim } from '../../src/db/sql/claims.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { call, mcpClient, tokenFor, useAgentServer } from './helpers.js';

const db = useTestDatabase();
const api = useAgentServer(() => db);

async function events(subjectKind: string, subjectId: string) {
  const { rows } = await db.pool.query(
    'SELECT kind, actor, reason, details FROM baton.events WHERE subject_kind = $1 AND subject_id = $2 ORDER BY subject_seq',
    [subjectKind, subjectId],
  );
  return rows as { kind: string; actor: string; reason: string | null; details: Record<string, unknown> }[];
}

describe('the agent API over MCP and HTTP', () => {
  it('lists its operations as MCP tools and runs a handoff whose actors all come from the tokens', async () => {
    const [a, b, c] = await Promise.all(['agent-a', 'agent-b', 'agent-c'].map((who) => tokenFor(db, who)));
    const key = uniqueObjectKey('plans/release.md');
    const A = await mcpClient(api.url, a!.secret);
    const B = await mcpClient(api.url, b!.secret);
    const C = await mcpClient(api.url, c!.secret);
    try {
      // The tools of the token's scopes (read, notes, objects): no run operation, no pool.claim.
      const { tools } = await A.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(
        (Object.keys(OPERATIONS) as OperationName[])
          .filter((o) => ['read', 'notes', 'objects'].includes(OPERATIONS[o].scope))
          .map(mcpToolName)
          .sort(),
      );
      expect(await A.use('whoami')).toMatchObject({ identity: 'agent-a', scopes: ['notes', 'objects', 'read'] });

      await A.use('object.create', { key, content: 'plan v1' });
      await A.use('object.grant', { key, grantee: 'agent-b', access: 'write' });
      await A.use('object.grant', { key, grantee: 'agent-c', access: 'write' });
      const taken = await A.use('object.take', { key, reason: 'drafting' });
      expect(taken.holder).toBe('agent-a');
      const written = await A.use('object.write', { key, version: 1, token: taken.token, content: 'plan v2' });
      const offered = await A.use('object.offer', { key, token: written.token, version: written.version, successor: 'agent-b' });
      expect(offered.offer).toMatchObject({ to: 'agent-b', version: 2 });
      // While the offer is open, the giver's writes are refused (O5).
      await expect(A.use('object.write', { key, version: 2, token: written.token, content: 'late' })).rejects.toMatchObject({
        code: 'handoff_pending',
      });
      const accepted = await B.use('object.accept', { key, version: 2 });
      expect(accepted.holder).toBe('agent-b');
      expect((await B.use('object.read', { key })).content).toBe('plan v2');

      // B offers to A again; C overtakes the open offer by taking the role.
      await B.use('object.offer', { key, token: accepted.token, version: 2, successor: 'agent-a' });
      const overtaken = await C.use('object.take', { key, reason: 'urgent fix' });
      expect(overtaken).toMatchObject({ holder: 'agent-c', offer: null });

      const log = (await C.use('object.log', { key })) as { kind: string; actor: string }[];
      expect(log.map((e) => `${e.kind}:${e.actor}`)).toEqual([
        'created:agent-a',
        'granted:agent-a',
        'granted:agent-a',
        'taken:agent-a',
        'written:agent-a',
        'offered:agent-a',
        'handoff_pending_refused:agent-a',
        'accepted:agent-b',
        'offered:agent-b',
        'overtaken:agent-c',
        'taken_over:agent-c',
      ]);
    } finally {
      await Promise.all([A.client.close(), B.client.close(), C.client.close()]);
    }
  });

  it('never lets token A act as B: no field, header or parameter changes the actor, and each attempt is refused', async () => {
    const a = await tokenFor(db, 'mallory');
    const key = uniqueObjectKey('victim/config');
    const victim = await tokenFor(db, 'victim');
    expect((await call(api.url, victim.secret, 'object.create', { key, content: 'v1' })).status).toBe(200);
    const before = await events('object', key);

    for (const field of ['actor', 'as', 'owner', 'identity', 'user']) {
      const attempt = await call(api.url, a.secret, 'object.take', { key, [field]: 'victim' });
      expect(attempt.status, field).toBe(400);
      expect(attempt.body).toMatchObject({ code: 'invalid_input' });
      expect(attempt.body.detail).toMatch(new RegExp(`unexpected field\\(s\\) ${field}: the actor is always the token's identity`));
    }
    // Headers and query parameters that name someone are not read at all: the call is made as mallory.
    const disguised = await fetch(`${api.url}/v1/object.grant?actor=victim&as=victim`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${a.secret}`,
        'content-type': 'application/json',
        'x-baton-actor': 'victim',
        'x-forwarded-user': 'victim',
      },
      body: JSON.stringify({ key, grantee: 'mallory', access: 'write' }),
    });
    expect(disguised.status).toBe(403);
    expect(((await disguised.json()) as { detail: string }).detail).toMatch(/grant of .* by mallory refused: only victim, who created/);
    // Two bearer tokens in one header are no token at all.
    const doubled = await call(api.url, undefined, 'whoami', {}, { authorization: `Bearer ${a.secret} ${victim.secret}` });
    expect(doubled.status).toBe(401);

    const after = await events('object', key);
    expect(after.slice(before.length).map((e) => `${e.kind}:${e.actor}`)).toEqual(['permission_refused:mallory']);
    const { rows: grants } = await db.pool.query('SELECT actor FROM baton.object_permissions WHERE object_key = $1', [key]);
    expect(grants.map((g) => g.actor)).toEqual(['victim']);
  });

  it('refuses a revoked or expired token, a token without the scope, and a run operation without a run token, recording each', async () => {
    const reader = await tokenFor(db, 'reader-1', ['read']);
    const revoked = await tokenFor(db, 'revoked-1');
    const expiring = await tokenFor(db, 'expiring-1', ['read'], 300);
    const client = await db.login('baton_client');
    await agentTokenRevoke(client.pool, { id: revoked.token.id, actor: 'operator', reason: 'laptop lost' });
    // Expired by the database's clock, the one the store checks (asked of the table, so no call is refused early).
    await waitFor(
      'the token to expire',
      async () => {
        const { rows } = await db.pool.query('SELECT expires_at <= now() AS expired FROM baton.agent_tokens WHERE id = $1', [
          expiring.token.id,
        ]);
        if (!rows[0].expired) throw new Error('not yet');
      },
      { timeoutMs: 120_000, intervalMs: 50 },
    );

    const noScope = await call(api.url, reader.secret, 'object.create', { key: uniqueObjectKey('scoped') });
    expect(noScope).toMatchObject({ status: 403, body: { code: 'forbidden', refusal: 'scope' } });
    expect(noScope.body.detail).toMatch(/has scope read; object.create needs objects/);
    const notRun = await call(api.url, reader.secret, 'context');
    expect(notRun).toMatchObject({ status: 403, body: { code: 'forbidden', refusal: 'not_a_run' } });
    const gone = await call(api.url, revoked.secret, 'whoami');
    expect(gone).toMatchObject({ status: 401, body: { code: 'unauthenticated', refusal: 'revoked' } });
    expect(gone.body.detail).toMatch(/revoked at .* by operator: laptop lost/);
    const old = await call(api.url, expiring.secret, 'whoami');
    expect(old).toMatchObject({ status: 401, body: { code: 'unauthenticated', refusal: 'expired' } });
    const forged = await call(api.url, `${reader.secret.slice(0, -2)}xx`, 'whoami');
    expect(forged).toMatchObject({ status: 401, body: { code: 'unauthenticated', refusal: 'unauthenticated' } });

    const refusals = (who: string) =>
      events('agent', who).then((es) => es.filter((e) => e.kind === 'api_refused').map((e) => e.details.refusal));
    expect(await refusals('reader-1')).toEqual(['scope', 'not_a_run']);
    expect(await refusals('revoked-1')).toEqual(['revoked']);
    expect(await refusals('expiring-1')).toEqual(['expired']);
    // A token baton never issued is not recorded call by call: its refusals are summarised per address (agentApiDoor.test.ts).
    expect(await refusals('anonymous')).toEqual([]);
  });

  it('answers bad input with a specific 4xx problem and changes nothing', async () => {
    const t = await tokenFor(db, 'careless');
    const key = uniqueObjectKey('bad/input');
    const count = async () => Number((await db.pool.query('SELECT count(*) FROM baton.events')).rows[0].count);
    const before = await count();
    const cases: [string, unknown, number, RegExp][] = [
      ['object.create', '{"key": ', 400, /the body is not JSON/],
      ['object.create', { key, content: 'x'.repeat(5 * 1024 * 1024) }, 413, /larger than 4194304 bytes/],
      ['object.frobnicate', {}, 404, /no operation "object.frobnicate"; the operations are whoami, context/],
      ['object.write', { key, version: '1', token: 1, content: 'x' }, 400, /version: Invalid input: expected number, received string/],
      ['object.write', { key, version: 1, token: 1 }, 400, /give exactly one of content and contentRef/],
      ['object.create', { key: '../etc/passwd' }, 400, /key: object keys are 1 to 200/],
      ['note.add', { text: 'a\u0000b', taskId: 'x' }, 400, /NUL character/],
      ['object.create', [1, 2], 400, /expected object, received array/],
    ];
    for (const [operation, body, status, detail] of cases) {
      const reply = await call(api.url, t.secret, operation, body);
      expect(reply.status, operation).toBe(status);
      expect(reply.contentType).toBe('application/problem+json');
      expect(reply.body.detail).toMatch(detail);
    }
    const missing = await call(api.url, undefined, 'whoami');
    expect(missing).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
    expect(missing.body.detail).toMatch(/Authorization: Bearer <token> header is required/);
    expect((await fetch(`${api.url}/v1/whoami`)).status).toBe(405);
    expect((await fetch(`${api.url}/nowhere`, { method: 'POST' })).status).toBe(404);
    expect(await count()).toBe(before);
    expect((await db.pool.query('SELECT 1 FROM baton.objects WHERE key = $1', [key])).rowCount).toBe(0);
  });

  it("gives the API's own database login nothing to forge with: no actor-taking function, no verification, no table", async () => {
    const login = await db.login('baton_agent');
    const victimKey = uniqueObjectKey('victim/plan');
    const victim = await tokenFor(db, 'victim-2');
    expect((await call(api.url, victim.secret, 'object.create', { key: victimKey, content: 'v1' })).status).toBe(200);
    const attempts: [string, unknown[]][] = [
      ['SELECT * FROM baton.object_take($1, $2)', [victimKey, 'victim-2']],
      ['SELECT * FROM baton.object_grant($1, $2, $3, $4)', [victimKey, 'victim-2', 'mallory', 'write']],
      ["SELECT * FROM baton.verification_record('t', 'v', 1, 'r', 'true', 0, 'd', '')", []],
      ["SELECT * FROM baton.verification_start('t', 'v')", []],
      ["SELECT * FROM baton.task_note_add('t', 'victim-2', NULL, 'forged')", []],
      ["SELECT * FROM baton.agent_token_create('mallory', ARRAY['admin'], NULL, sha256('x'), 'mallory')", []],
      ['SELECT secret_sha256 FROM baton.agent_tokens', []],
      [
        "INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by) VALUES ('tok_0000000000000000', 'victim-2', ARRAY['admin'], sha256('x'), 'm')",
        [],
      ],
    ];
    for (const [sql, params] of attempts) {
      await expect(login.pool.query(sql, params), sql).rejects.toMatchObject({ code: '42501' });
    }
    // Through the API, no operation verifies anything, and none is reachable by a made-up name.
    expect(Object.keys(OPERATIONS).filter((o) => /verif/i.test(o))).toEqual([]);
    expect((await call(api.url, victim.secret, 'verify', { revision: 'a'.repeat(40) })).status).toBe(404);
    const { rows } = await db.pool.query(`SELECT kind, actor FROM baton.events WHERE subject_kind = 'object' AND subject_id = $1`, [
      victimKey,
    ]);
    expect(rows.map((r) => `${r.kind}:${r.actor}`)).toEqual(['created:victim-2']);
  });

  it('survives a request target URL parsing would choke on, and answers it as a problem', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(api.url).port), '127.0.0.1', () =>
        socket.end('POST //[ HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 4\d\d /);
    expect(reply).toContain('application/problem+json');
    expect((await call(api.url, (await tokenFor(db, 'after-crash')).secret, 'whoami')).status).toBe(200);
  });

  it("ends a pooled run's token with the token that took it, and never lets a run token take another run", async () => {
    const worker = await db.login('baton_worker');
    const graphId = await insertGraph(db.pool, { solo: [] }, { prefix: 'pooltok' });
    const taskId = `${graphId}/solo`;
    const claim = await taskClaim(worker.pool, taskId, 'w-1', 60_000);
    await poolOffer(worker.pool, { taskId, owner: 'w-1', claimVersion: claim!.claimVersion }, 'night');
    const taker = await tokenFor(db, 'nightly', ['read', 'notes', 'submit']);
    const taken = await call(api.url, taker.secret, 'pool.claim', { pool: 'night' });
    expect(taken.status).toBe(200);
    expect(taken.body).toMatchObject({ taskId, identity: 'nightly', claimVersion: claim!.claimVersion });
    const run = taken.body.runToken as string;
    expect((await call(api.url, run, 'whoami')).body).toMatchObject({ identity: 'nightly', scopes: ['notes', 'read'], taskId });
    // A run token cannot take runs of its own, whatever its taker could.
    expect((await call(api.url, run, 'pool.claim', { pool: 'night' })).body).toMatchObject({ code: 'forbidden', refusal: 'not_a_run' });
    const client = await db.login('baton_client');
    await agentTokenRevoke(client.pool, { id: taker.token.id, actor: 'operator', reason: 'stolen' });
    const after = await call(api.url, run, 'heartbeat', {});
    expect(after).toMatchObject({ status: 401, body: { code: 'unauthenticated', refusal: 'revoked' } });
    expect(after.body.detail).toMatch(
      /run token tok_[0-9a-f]{16} was taken with token tok_[0-9a-f]{16} of nightly, revoked at .* by operator: stolen/,
    );
  });

  it('lets a token limited to some pools take work from those only, and records the refusal (U11)', async () => {
    const worker = await db.login('baton_worker');
    const graphId = await insertGraph(db.pool, { nightly: [], release: [] }, { prefix: 'poolperm' });
    for (const [key, pool] of [
      ['nightly', 'night'],
      ['release', 'release'],
    ] as const) {
      const taskId = `${graphId}/${key}`;
      const claim = await taskClaim(worker.pool, taskId, 'w-1', 60_000);
      await poolOffer(worker.pool, { taskId, owner: 'w-1', claimVersion: claim!.claimVersion }, pool);
    }
    const client = await db.login('baton_client');
    const limited = await agentTokenCreate(client.pool, {
      identity: 'night-agent',
      scopes: ['read', 'submit'],
      createdBy: 'operator',
      pools: ['night'],
    });
    expect(limited.token.pools).toEqual(['night']);

    const refused = await call(api.url, limited.secret, 'pool.claim', { pool: 'release' });
    expect(refused).toMatchObject({ status: 403, body: { code: 'forbidden', refusal: 'not_granted' } });
    expect(refused.body.detail).toMatch(/token tok_[0-9a-f]{16} of night-agent may take work from pool night only, not from release/);
    const recorded = (await events('agent', 'night-agent')).find((e) => e.kind === 'api_refused');
    expect(recorded).toMatchObject({ details: { operation: 'pool.claim', refusal: 'not_granted', requested_pool: 'release' } });
    expect((await call(api.url, limited.secret, 'pool.claim', { pool: 'night' })).body).toMatchObject({ taskId: `${graphId}/nightly` });

    // Negative control: a token without pools takes the release run the limited one could not.
    const any = await tokenFor(db, 'any-agent', ['read', 'submit']);
    expect(any.token.pools).toBeNull();
    expect((await call(api.url, any.secret, 'pool.claim', { pool: 'release' })).body).toMatchObject({ taskId: `${graphId}/release` });
    await expect(
      agentTokenCreate(client.pool, { identity: 'x', scopes: ['submit'], createdBy: 'operator', pools: ['Bad Pool'] }),
    ).rejects.toThrow(/pools are 1 to 50 names of 1 to 63 lowercase letters, digits, _ or -, not Bad Pool/);
  });

  it("hands a pool's offers out by their graph's priority, then to graphs in turn, then oldest first (U11)", async () => {
    const worker = await db.login('baton_worker');
    const pool = `fair-${Date.now().toString(36)}`;
    const offer = async (graphId: string, key: string) => {
      const taskId = `${graphId}/${key}`;
      const claim = await taskClaim(worker.pool, taskId, 'w-1', 60_000);
      await poolOffer(worker.pool, { taskId, owner: 'w-1', claimVersion: claim!.claimVersion }, pool);
    };
    // Offered in this order: the busy graph's three first, then one of an urgent graph, then one of another.
    const busy = await insertGraph(db.pool, { b0: [], b1: [], b2: [] }, { prefix: 'busy' });
    const urgent = await insertGraph(db.pool, { u0: [] }, { prefix: 'urgent', policy: { priority: 1 } });
    const other = await insertGraph(db.pool, { o0: [] }, { prefix: 'other' });
    for (const key of ['b0', 'b1', 'b2']) await offer(busy, key);
    await offer(urgent, 'u0');
    await offer(other, 'o0');
    const taker = await tokenFor(db, 'fair-taker', ['read', 'submit']);
    const taken: string[] = [];
    for (let i = 0; i < 5; i++) taken.push((await call(api.url, taker.secret, 'pool.claim', { pool })).body.key);
    // First come first served would hand out b0, b1, b2, u0, o0.
    expect(taken).toEqual(['u0', 'b0', 'o0', 'b1', 'b2']);
  });

  it('limits the rate per token and per address, with Retry-After', async () => {
    const login = await db.login('baton_agent');
    const limited = await startAgentServer(createAgentApi({ db: login.pool, rateLimit: { perSecond: 0.01, burst: 3 } }), {
      port: 0,
      host: '127.0.0.1',
    });
    try {
      const t = await tokenFor(db, 'hasty');
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await call(limited.url, t.secret, 'whoami')).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const refused = await fetch(`${limited.url}/v1/whoami`, { method: 'POST', headers: { authorization: `Bearer ${t.secret}` } });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const problem = (await refused.json()) as { code: string; retryAfterMs: number };
      expect(problem.code).toBe('rate_limited');
      expect(Number.isInteger(problem.retryAfterMs) && problem.retryAfterMs > 0, `retryAfterMs ${problem.retryAfterMs}`).toBe(true);
      // Made-up tokens each have a bucket of their own; the address's bucket (4 x 3) still runs out.
      const guesses = [];
      for (let i = 0; i < 12; i++) guesses.push((await call(limited.url, `baton_guess${i}`, 'whoami')).status);
      expect(guesses.filter((s) => s === 429).length).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });

  it('serves an OpenAPI document of every operation, from the same schemas', async () => {
    const doc = (await (await fetch(`${api.url}/openapi.json`)).json()) as { paths: Record<string, any> };
    expect(Object.keys(doc.paths).sort()).toEqual(
      Object.keys(OPERATIONS)
        .map((o) => `/v1/${o}`)
        .sort(),
    );
    const write = doc.paths['/v1/object.write'].post.requestBody.content['application/json'].schema;
    expect(write.required).toEqual(['key', 'version', 'token']);
    expect(write.additionalProperties).toBe(false);
    // The refusals that come with Retry-After (the rate limit above, the store down) say so.
    for (const status of ['429', '503'])
      expect(doc.paths['/v1/whoami'].post.responses[status].headers['retry-after']).toMatchObject({ required: true });
  });
});
