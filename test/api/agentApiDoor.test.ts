// The agent API's door under input and load nobody here wrote (issue 19): text Postgres cannot
// store is refused before it reaches the store, the token is checked before anything else is
// answered, a failure is logged under an id the caller gets, made-up tokens are throttled before
// the database and summarised instead of recorded one by one, and the published schemas (OpenAPI
// and MCP) state the rules the server enforces, with MCP refusals as problem details.
import http from 'node:http';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentApi, type AgentApiOptions } from '../../src/api/agentApi.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { OPERATIONS } from '../../src/api/operations.js';
import { agentTokenRevoke } from '../../src/api/tokens.js';
import { refusalBudgetKey } from '../../src/api/tokenGate.js';
import { newTokenSecret } from '../../src/api/tokenSecret.js';
import { createPool } from '../../src/db/pool.js';
import type { Queryable } from '../../src/db/queryable.js';
import { poolOffer } from '../../src/db/sql/poolRuns.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { BATON_BIN } from '../../src/packageRoot.js';
import { cleanEnv } from '../helpers/cli.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { runningTask } from '../helpers/tools.js';
import { call, mcpClient, tokenFor } from './helpers.js';

const db = useTestDatabase();

/** The values of every statement the API sent to the store, in order. */
const storeCalls: unknown[][] = [];
let door: AgentServer;

beforeAll(async () => {
  const login = await db.login('baton_agent');
  const recording: Queryable = {
    query: (text, values) => {
      storeCalls.push([...(values ?? [])]);
      return login.pool.query(text, values as unknown[]);
    },
  };
  door = await startAgentServer(createAgentApi({ db: recording }), { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await door?.close();
});

/** A NUL or a lone surrogate in a value, raw or as JSON writes it (`\u0000`, `\ud800`). */
const BAD_TEXT = /\\u0000|\\ud[89a-f][0-9a-f]{2}/i;

/**
 * A run token for a running task of its own, as `pool.claim` gives it to a remote agent through this
 * door (a command run's token works only on its run's own endpoint, not on `baton serve`).
 */
async function runToken(): Promise<string> {
  const worker = await db.login('baton_worker');
  await poolOffer(worker.pool, await runningTask(db.pool), 'door');
  const taker = await tokenFor(db, 'door-agent', ['read', 'submit']);
  const taken = await call(door.url, taker.secret, 'pool.claim', { pool: 'door' });
  expect(taken.status).toBe(200);
  return taken.body.runToken as string;
}

const eventCount = async () => Number((await db.pool.query('SELECT count(*) FROM baton.events')).rows[0].count);

/** One POST from a given local address (127.0.0.0/8 all reach the loopback server); the body as sent. */
function postFrom(url: string, localAddress: string, secret: string, operation: string, body = '{}') {
  const { hostname, port } = new URL(url);
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
    const req = http.request(
      {
        host: hostname,
        port,
        localAddress,
        method: 'POST',
        path: `/v1/${operation}`,
        agent: false,
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A server on 127.0.0.1 that does `onConnection` with each connection it takes; port 0 once closed. */
async function rawServer(onConnection: (socket: net.Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => sockets.add(socket));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function withServer<T>(options: Omit<AgentApiOptions, 'db'> & { db?: Queryable }, use: (url: string) => Promise<T>): Promise<T> {
  const api = createAgentApi({ db: (await db.login('baton_agent')).pool, ...options });
  const server = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
  try {
    return await use(server.url);
  } finally {
    await server.close();
    await api.close();
  }
}

describe("the agent API's door", () => {
  it('refuses a NUL or an unpaired surrogate anywhere in the input, keys included, before the text reaches the store', async () => {
    const run = await runToken();
    const before = await eventCount();
    const bodies: [string, string, RegExp][] = [
      ['heartbeat', '{"progress":{"a":"\\u0000"}}', /progress\.a/],
      ['heartbeat', '{"progress":{"a\\u0000b":1}}', /progress/],
      ['heartbeat', '{"progress":{"a":"x\\ud800"}}', /progress\.a/],
      ['heartbeat', '{"progress":{"deep":[{"b":{"\\udc00x":[2]}}]}}', /progress\.deep\.0\.b/],
      ['heartbeat', '{"\\u0000":1}', /input/],
      ['tool.call', '{"tool":"t","step":"s","params":{"list":["ok","\\ud83d"]}}', /params\.list\.1/],
      ['note.add', '{"text":"fine","taskId":"\\udfff"}', /taskId/],
    ];
    storeCalls.length = 0;
    for (const [operation, body, where] of bodies) {
      const reply = await call(door.url, run, operation, body);
      expect(reply.status, body).toBe(400);
      expect(reply.body, body).toMatchObject({ code: 'invalid_input' });
      expect(reply.body.detail, body).toMatch(/NUL character or an unpaired surrogate/);
      expect(reply.body.detail, body).toMatch(where);
    }
    expect(storeCalls.filter((values) => BAD_TEXT.test(JSON.stringify(values)))).toEqual([]);
    expect(await eventCount()).toBe(before);
    // The same token with storable text is served: it was the text that was refused.
    expect(await call(door.url, run, 'heartbeat', '{"progress":{"a":"\\u00e9 \\ud83d\\ude00"}}')).toMatchObject({
      status: 200,
      body: { pooled: true },
    });
  });

  it('checks the token first: a made-up, revoked or missing token hears 401 whatever its body, and a made-up one reaches nothing', async () => {
    const madeUp = newTokenSecret();
    const revoked = await tokenFor(db, 'door-revoked');
    await agentTokenRevoke((await db.login('baton_client')).pool, { id: revoked.token.id, actor: 'operator', reason: 'door test' });
    const bodies: [string, string][] = [
      ['heartbeat', '{"progress":{"a":"\\u0000"}}'],
      ['heartbeat', '{"progress":{"\\ud800":1}}'],
      ['whoami', 'null'],
      ['object.take', '{"key":"k","actor":"victim"}'],
      ['object.create', '{"key": '],
      ['object.frobnicate', '{}'],
      ['object.create', JSON.stringify({ key: 'k', content: 'x'.repeat(5 * 1024 * 1024) })],
    ];
    storeCalls.length = 0;
    for (const [operation, body] of bodies) {
      const guessed = await call(door.url, madeUp, operation, body);
      expect(guessed, `${operation} ${body.slice(0, 40)}`).toMatchObject({
        status: 401,
        body: { code: 'unauthenticated', refusal: 'unauthenticated' },
      });
      const old = await call(door.url, revoked.secret, operation, body);
      expect(old, `${operation} ${body.slice(0, 40)}`).toMatchObject({
        status: 401,
        body: { code: 'unauthenticated', refusal: 'revoked' },
      });
      const none = await call(door.url, undefined, operation, body);
      expect(none, `${operation} ${body.slice(0, 40)}`).toMatchObject({
        status: 401,
        body: { code: 'unauthenticated', refusal: 'missing' },
      });
    }
    expect(storeCalls.filter((values) => BAD_TEXT.test(JSON.stringify(values)))).toEqual([]);
    // The made-up token was asked about (secret and operation), and nothing else of its calls was sent.
    const asked = storeCalls.filter((values) => values[0] === madeUp);
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((values) => values.length === 2)).toBe(true);
    // The revoked token's refusals are recorded one by one, as every known token's are.
    const { rows } = await db.pool.query(
      `SELECT details->>'refusal' AS refusal FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'door-revoked' AND kind = 'api_refused'`,
    );
    expect(rows.map((r) => r.refusal)).toEqual(bodies.map(() => 'revoked'));
  });

  it('logs every 5xx with its stack under a request id, and gives the caller that id (HTTP and MCP)', async () => {
    const lines: string[] = [];
    const agent = await db.login('baton_agent');
    // The store fails on the operation itself (the token is still checked): a fault, not the caller's doing.
    const failing: Queryable = {
      query: (text, values) =>
        text.includes('agent_call')
          ? Promise.reject(new Error('the store went away mid-call'))
          : agent.pool.query(text, values as unknown[]),
    };
    const t = await tokenFor(db, 'door-unlucky');
    await withServer({ db: failing, log: (line) => lines.push(line) }, async (url) => {
      const response = await fetch(`${url}/v1/whoami`, { method: 'POST', headers: { authorization: `Bearer ${t.secret}` } });
      const problem = (await response.json()) as Record<string, string>;
      expect(response.status).toBe(500);
      expect(problem).toMatchObject({ code: 'internal', status: 500, requestId: expect.stringMatching(/^\S{8,}$/) });
      expect(response.headers.get('x-request-id')).toBe(problem.requestId);
      const logged = lines.find((l) => l.includes(problem.requestId!));
      expect(logged).toMatch(/the store went away mid-call/);
      expect(logged).toMatch(/\n\s+at /);

      const mcp = await mcpClient(url, t.secret);
      try {
        const failed = await mcp.use('whoami').catch((e: Record<string, unknown>) => e);
        expect(failed).toMatchObject({ code: 'internal', status: 500, requestId: expect.stringMatching(/^\S{8,}$/) });
        expect(lines.find((l) => l.includes(String(failed.requestId)))).toMatch(/the store went away mid-call/);
      } finally {
        await mcp.client.close();
      }
    });
  });

  it('names a store it cannot reach: 503 store_unavailable with Retry-After, over HTTP and MCP, naming no host and no secret', async () => {
    const agent = await db.login('baton_agent');
    const password = new URL(agent.url).password;
    const at = (port: number) => {
      const url = new URL(agent.url);
      url.host = `127.0.0.1:${port}`;
      return url.toString();
    };
    // A port nothing listens on (a server's, given up), a server that hangs up, one that never answers.
    const gone = await rawServer(() => {});
    await gone.close();
    const hangsUp = await rawServer((socket) => socket.destroy());
    const silent = await rawServer(() => {});
    const pools = [
      createPool(at(gone.port), { max: 1 }),
      createPool(at(hangsUp.port), { max: 1 }),
      createPool(at(silent.port), { max: 1, queryTimeoutMs: 300 }),
    ];
    // Postgres itself ends the connection mid-call (SQLSTATE 57P01, as on a restart).
    const terminated: Queryable = {
      query: async () => {
        const client = await agent.pool.connect();
        try {
          await client.query('SELECT pg_terminate_backend(pg_backend_pid())');
        } finally {
          client.release(true);
        }
        throw new Error('the backend was not terminated');
      },
    };
    const stores: [string, Queryable, RegExp][] = [
      ['connection refused', pools[0]!, /ECONNREFUSED/],
      ['a server that hangs up', pools[1]!, /Connection terminated unexpectedly/],
      ['a server that never answers', pools[2]!, /Connection terminated due to connection timeout/],
      ['Postgres ending the connection', terminated, /terminating connection due to administrator command/],
    ];
    let store: Queryable = agent.pool;
    const lines: string[] = [];
    const t = await tokenFor(db, 'door-stranded');
    try {
      await withServer(
        { db: { query: (text, values) => store.query(text, values as unknown[]) }, log: (line) => lines.push(line) },
        async (url) => {
          // Connected while the store answers: the token is known to this server from then on.
          const mcp = await mcpClient(url, t.secret);
          try {
            for (const [how, unreachable, logged] of stores) {
              store = unreachable;
              const known = await postFrom(url, '127.0.0.1', t.secret, 'whoami');
              const unseen = await postFrom(url, '127.0.0.1', newTokenSecret(), 'whoami');
              const viaMcp = await mcp.use('object.show', { key: 'door/anything' }).catch((e: Record<string, unknown>) => e);
              for (const [which, reply] of [
                ['known token', known],
                ['unseen token', unseen],
              ] as const) {
                expect(reply.status, `${how}, ${which}`).toBe(503);
                expect(reply.headers['retry-after'], `${how}, ${which}`).toBe('5');
                expect(reply.body, `${how}, ${which}`).toMatchObject({
                  type: 'urn:baton:error:store_unavailable',
                  code: 'store_unavailable',
                  status: 503,
                  retryAfterMs: 5000,
                  detail: expect.stringMatching(/^PostgreSQL, baton's store, cannot be reached: /),
                });
              }
              expect(viaMcp, how).toMatchObject({ code: 'store_unavailable', status: 503, detail: known.body.detail });
              for (const answer of [known.body, unseen.body, viaMcp]) {
                const text = JSON.stringify(answer);
                expect(text, how).not.toContain(password);
                expect(text, how).not.toContain('127.0.0.1');
              }
              // The server's own log has what pg said, under the request's id.
              expect(
                lines.find((l) => l.includes(known.body.requestId)),
                how,
              ).toMatch(logged);
            }
          } finally {
            store = agent.pool;
            await mcp.client.close();
          }
        },
      );
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await hangsUp.close();
      await silent.close();
    }
  });

  it('throttles made-up tokens per address before the database and records them as summaries, not one event each', async () => {
    const known = await tokenFor(db, 'door-neighbour');
    const flood = Array.from({ length: 40 }, () => newTokenSecret());
    await withServer({ refusedTokenLimit: { perSecond: 0.001, burst: 5 }, refusalSummaryMs: 50 }, async (url) => {
      // A token this server has seen answer is not held up by the flood from its address.
      expect((await postFrom(url, '127.0.0.3', known.secret, 'whoami')).status).toBe(200);
      const seqBefore = Number(
        (
          await db.pool.query(
            `SELECT coalesce(max(subject_seq), 0) AS seq FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'anonymous'`,
          )
        ).rows[0].seq,
      );

      const replies = await Promise.all(flood.map((secret) => postFrom(url, '127.0.0.3', secret, 'whoami')));
      const codes = replies.map((r) => r.body.code);
      expect(codes.filter((c) => c === 'unauthenticated')).toHaveLength(5);
      expect(codes.filter((c) => c === 'rate_limited')).toHaveLength(35);
      for (const r of replies.filter((r) => r.status === 429)) expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await postFrom(url, '127.0.0.3', known.secret, 'whoami')).status).toBe(200);
      // Another address has a budget of its own.
      expect((await postFrom(url, '127.0.0.4', newTokenSecret(), 'whoami')).body).toMatchObject({ code: 'unauthenticated' });

      const summaries = await waitFor(
        'the summaries of the flood',
        async () => {
          const { rows } = await db.pool.query(
            `SELECT details FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'anonymous' AND kind = 'api_refused' AND subject_seq > $1 AND details->>'address' = '127.0.0.3'`,
            [seqBefore],
          );
          const counted = rows.reduce((n, r) => n + Number(r.details.count), 0);
          if (counted < flood.length) throw new Error(`${counted} of ${flood.length} counted`);
          return rows.map((r) => r.details as Record<string, unknown>);
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
      expect(summaries.reduce((n, d) => n + Number(d.count), 0)).toBe(40);
      expect(summaries.reduce((n, d) => n + Number(d.throttled), 0)).toBe(35);
      expect(summaries.length).toBeLessThan(flood.length);
      expect(summaries.every((d) => d.refusal === 'unauthenticated')).toBe(true);
      // Nothing of the flood was recorded one by one.
      const { rows: single } = await db.pool.query(
        `SELECT count(*) FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'anonymous' AND subject_seq > $1 AND NOT details ? 'count'`,
        [seqBefore],
      );
      expect(Number(single[0].count)).toBe(0);
    });
  });

  it('bounds made-up tokens from many addresses too: a budget for all of them, an IPv6 address counted by its /64', async () => {
    await withServer(
      { refusedTokenLimit: { perSecond: 0.001, burst: 5 }, refusedTokenLimitAll: { perSecond: 0.001, burst: 12 }, refusalSummaryMs: 50 },
      async (url) => {
        // Six addresses, four made-up tokens each: within each address's budget, past the budget of all.
        const addresses = ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14', '127.0.0.15', '127.0.0.16'];
        const replies = await Promise.all(
          addresses.flatMap((address) => Array.from({ length: 4 }, () => postFrom(url, address, newTokenSecret(), 'whoami'))),
        );
        const codes = replies.map((r) => r.body.code);
        expect(codes.filter((c) => c === 'unauthenticated')).toHaveLength(12);
        expect(codes.filter((c) => c === 'rate_limited')).toHaveLength(12);
        expect(replies.find((r) => r.body.code === 'rate_limited')?.body.detail).toMatch(/refused tokens from all addresses/);
      },
    );
    expect(refusalBudgetKey('2001:db8::1')).toBe(refusalBudgetKey('2001:0db8:0:0:ffff::2'));
    expect(refusalBudgetKey('2001:db8:0:1::1')).not.toBe(refusalBudgetKey('2001:db8::1'));
    expect(refusalBudgetKey('::ffff:127.0.0.3')).toBe('127.0.0.3');
  });

  it('publishes required bodies and the content rules in OpenAPI and MCP as the server enforces them, and refuses a null body', async () => {
    const doc = (await (await fetch(`${door.url}/openapi.json`)).json()) as { paths: Record<string, any> };
    const t = await tokenFor(db, 'door-schemas');
    for (const name of Object.keys(OPERATIONS)) {
      const { requestBody } = doc.paths[`/v1/${name}`].post;
      // What the document says of an empty body is what the server does with one.
      const empty = await call(door.url, t.secret, name, '');
      expect(empty.status === 400 && empty.body.code === 'invalid_input', `${name}: ${empty.status} ${empty.body?.detail ?? ''}`).toBe(
        requestBody.required,
      );
    }
    const mcp = await mcpClient(door.url, t.secret);
    const { tools } = await mcp.client.listTools();
    await mcp.client.close();
    const validator = new AjvJsonSchemaValidator();
    for (const [name, base] of [
      ['object.create', { silenceTimeoutMs: 1000 }],
      ['object.write', { version: 1, token: 1 }],
      ['object.suggest', { baseVersion: 1 }],
    ] as const) {
      const schema = doc.paths[`/v1/${name}`].post.requestBody.content['application/json'].schema;
      expect(tools.find((tool) => tool.name === name.replace('.', '_'))!.inputSchema, name).toEqual(schema);
      const check = validator.getValidator(schema);
      for (const given of [{}, { content: 'c' }, { contentRef: 's3://bucket/c' }, { content: 'c', contentRef: 's3://bucket/c' }]) {
        const body = { key: uniqueObjectKey('door/rules'), ...base, ...given };
        const reply = await call(door.url, t.secret, name, body);
        const refused = reply.status === 400 && reply.body.code === 'invalid_input';
        expect(check(body).valid, `${name} ${JSON.stringify(given)}: the server answered ${reply.status} ${reply.body?.detail ?? ''}`).toBe(
          !refused,
        );
      }
    }
    const nothing = await call(door.url, t.secret, 'whoami', 'null');
    expect(nothing).toMatchObject({ status: 400, body: { code: 'invalid_input' } });
    expect(nothing.body.detail).toMatch(/null/);
    expect(await call(door.url, t.secret, 'whoami', '')).toMatchObject({ status: 200, body: { identity: 'door-schemas' } });
  });

  it('answers a refused MCP argument with the same problem details as HTTP, also through `baton mcp` over stdio', async () => {
    const t = await tokenFor(db, 'door-mcp');
    const mcp = await mcpClient(door.url, t.secret);
    try {
      const key = uniqueObjectKey('door/mcp');
      await mcp.use('object.create', { key, content: 'v1' });
      const viaMcp = await mcp.use('object.take', { key, actor: 'victim' }).catch((e: unknown) => e);
      const viaHttp = await call(door.url, t.secret, 'object.take', { key, actor: 'victim' });
      expect(viaMcp).toMatchObject({
        type: 'urn:baton:error:invalid_input',
        status: 400,
        code: 'invalid_input',
        detail: viaHttp.body.detail,
      });
      expect(viaHttp.body.detail).toMatch(/unexpected field\(s\) actor: the actor is always the token's identity/);
      await expect(mcp.use('object.write', { key, version: 1, token: 1 })).rejects.toMatchObject({
        code: 'invalid_input',
        detail: expect.stringMatching(/exactly one of content and contentRef/),
      });
      const unknown = (await mcp.client.callTool({ name: 'object_frobnicate', arguments: {} })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      expect(unknown.isError).toBe(true);
      expect(JSON.parse(unknown.content[0]!.text)).toMatchObject({ code: 'not_found', status: 404 });

      // The stdio server a run's .mcp.json starts relays the endpoint's problem as it came.
      const relay = new Client({ name: 'door-stdio', version: '1' });
      await relay.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [BATON_BIN, 'mcp'],
          env: cleanEnv({ BATON_URL: door.url, BATON_TOKEN: t.secret }) as Record<string, string>,
        }),
      );
      try {
        const relayed = (await relay.callTool({ name: 'object_take', arguments: { key, actor: 'victim' } })) as {
          isError?: boolean;
          content: { text: string }[];
        };
        expect(relayed.isError).toBe(true);
        expect(JSON.parse(relayed.content[0]!.text)).toEqual(viaHttp.body);
      } finally {
        await relay.close();
      }
    } finally {
      await mcp.client.close();
    }
  });
});
