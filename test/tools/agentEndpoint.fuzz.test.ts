// Fuzzing the agent's tool endpoint (S2, S3, X1) with a real HTTP client against a real endpoint,
// a real gateway and real Postgres: whatever an agent sends, a request is either a tool call
// (200, one ledger row) or refused with a 4xx JSON error that says why, and a refused request
// records no tool call and reaches no tool.
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectToolCalls } from '../../src/db/sql/selectToolCalls.js';
import type { Fence } from '../../src/db/storeCall.js';
import { startToolEndpoint, type ToolEndpoint } from '../../src/tools/agentEndpoint.js';
import { createToolGateway } from '../../src/tools/toolGateway.js';
import type { Json } from '../../src/tools/types.js';
import { useTestDatabase } from '../helpers/db.js';
import { runningTask } from '../helpers/tools.js';

const db = useTestDatabase();

// A few seconds on 2 cores: each run makes a running task of its own and sends one request.
const NUM_RUNS = 120;
/** The endpoint's body limit (agentEndpoint.ts). */
const MAX_REQUEST_BYTES = 128 * 1024;

/** The tool behind the gateway: it counts what reaches it. */
const executed: string[] = [];
const gateway = () =>
  createToolGateway({
    db: db.pool,
    tools: { echo: { execute: async (key: string, params: Json) => (executed.push(key), { outcome: 'succeeded', result: { key, params } }) } },
  });

let fence: Fence;
let tcp: ToolEndpoint;
let socket: ToolEndpoint;
const socketPath = path.join(tmpdir(), `baton-endpoint-fuzz-${process.pid}.sock`);

beforeAll(async () => {
  const tools = gateway();
  // Each run points the endpoints at a fresh task, so its ledger shows exactly what that run caused.
  const callTool = (call: Parameters<typeof tools.call>[1]) => tools.call(fence, call);
  [tcp, socket] = await Promise.all([startToolEndpoint(callTool), startToolEndpoint(callTool, { socketPath })]);
});

afterAll(async () => {
  await Promise.all([tcp?.close(), socket?.close()]);
});

interface Request {
  via: 'tcp' | 'socket';
  method: string;
  path: string;
  auth: 'valid' | 'none' | { given: string };
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** Send the body in pieces without a length (chunked), as a streaming client does. */
  chunked: boolean;
}

interface Reply {
  status: number;
  body: string;
}

/** Sends `request` with Node's HTTP client on a connection of its own; resolves with the reply. */
function send(request: Request): Promise<Reply> {
  const endpoint = request.via === 'tcp' ? tcp : socket;
  const url = new URL(endpoint.url);
  const headers: Record<string, string> = { ...request.headers };
  if (request.auth === 'valid') headers.authorization = `Bearer ${endpoint.token}`;
  else if (request.auth !== 'none') headers.authorization = request.auth.given;
  if (request.body && !request.chunked) headers['content-length'] = String(request.body.length);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        ...(request.via === 'tcp' ? { host: url.hostname, port: url.port } : { socketPath: endpoint.socketPath }),
        method: request.method,
        path: request.path,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    // The endpoint may answer (413, 401) and close before the whole body is sent: the reply counts.
    req.on('error', reject);
    if (request.body && request.chunked) {
      for (let i = 0; i < request.body.length; i += 4096) req.write(request.body.subarray(i, i + 4096));
    } else if (request.body) {
      req.write(request.body);
    }
    req.end();
  });
}

const anyText = fc.string({ unit: 'binary', maxLength: 30 });
const stepArb = fc.oneof({ weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/) }, { weight: 1, arbitrary: anyText });
/** A call body: as the agent should send it, or with a field of the wrong type, or one naming a task, owner or claim. */
const callArb = fc
  .tuple(
    fc.record(
      {
        tool: fc.oneof({ weight: 4, arbitrary: fc.constant('echo') }, { weight: 1, arbitrary: fc.constantFrom('mailer', 'toString', '__proto__', '', 1, null) }),
        step: fc.oneof({ weight: 4, arbitrary: stepArb }, { weight: 1, arbitrary: fc.constantFrom(null, 7, [], {}) }),
        params: fc.jsonValue({ maxDepth: 3 }),
      },
      { requiredKeys: ['tool', 'step'] },
    ),
    fc.oneof(
      { weight: 3, arbitrary: fc.constant({}) },
      { weight: 1, arbitrary: fc.constantFrom({ taskId: 'other/task' }, { owner: 'someone-else' }, { claimVersion: 99 }, { ['__proto__']: { tool: 'echo' } }) },
    ),
  )
  .map(([call, extra]) => ({ ...call, ...extra }));
const bodyArb: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  { weight: 6, arbitrary: callArb.map((call) => Buffer.from(JSON.stringify(call))) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? '')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.constantFrom('', '{', '{"tool":"echo","step":"s",', 'null', '[]', '{"__proto__":{"tool":"echo"}}', '\uFEFF{}').map((t) => Buffer.from(t)) },
  // Nested too deep for code that walks it recursively (built as text: JSON.stringify would overflow here).
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 60_000 }).map((d) => Buffer.from(`{"tool":"echo","step":"deep","params":${'['.repeat(d)}${']'.repeat(d)}}`)) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_REQUEST_BYTES - 64, max: 4 * MAX_REQUEST_BYTES }).map((n) => Buffer.from(`{"tool":"echo","step":"s","params":"${'x'.repeat(n)}"}`)) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/).filter((n) => !['authorization', 'content-length', 'transfer-encoding', 'host', 'connection', 'expect', 'upgrade'].includes(n));
const requestArb: fc.Arbitrary<Request> = fc.record({
  via: fc.constantFrom('tcp' as const, 'socket' as const),
  method: fc.oneof({ weight: 6, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE') }),
  path: fc.oneof({ weight: 6, arbitrary: fc.constant('/call') }, { weight: 1, arbitrary: fc.constantFrom('/', '/call/', '/call?x=1', '/CALL', '//call', '/%00', '/call#x', '*') }),
  auth: fc.oneof(
    { weight: 6, arbitrary: fc.constant('valid' as const) },
    { weight: 1, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{0,80}$/).map((given) => ({ given: `Bearer ${given}` })) },
  ),
  headers: fc.dictionary(headerName, fc.stringMatching(/^[\x20-\x7e]{0,200}$/), { maxKeys: 4 }),
  body: bodyArb,
  chunked: fc.boolean(),
});

describe('fuzzing the agent tool endpoint (S3)', () => {
  it('answers every request with a tool call or a specific 4xx JSON error, and records nothing it refused', async () => {
    await fc.assert(
      fc.asyncProperty(requestArb, async (request) => {
        fence = await runningTask(db.pool);
        const sent = executed.length;
        const reply = await send(request);
        const calls = await selectToolCalls(db.pool, fence.taskId);
        if (reply.status === 200) {
          expect(JSON.parse(reply.body)).toMatchObject({ tool: 'echo', status: 'succeeded', sentNow: 1 });
          expect(calls).toHaveLength(1);
          expect(executed.length).toBe(sent + 1);
          return;
        }
        expect(reply.status, reply.body).toBeGreaterThanOrEqual(400);
        expect(reply.status, reply.body).toBeLessThan(500);
        const { error } = JSON.parse(reply.body) as { error: { name: string; message: string } };
        expect(error.name).toEqual(expect.any(String));
        expect(error.message.length).toBeGreaterThan(10);
        expect(calls).toEqual([]);
        expect(executed.length).toBe(sent);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('answers bytes that are not even HTTP with a 4xx JSON error, not a dropped connection', async () => {
    const raw = (bytes: Buffer) =>
      new Promise<string>((resolve, reject) => {
        const url = new URL(tcp.url);
        const conn = net.connect(Number(url.port), url.hostname, () => conn.end(bytes));
        let reply = '';
        conn.on('data', (c: Buffer) => (reply += c.toString('latin1')));
        conn.on('close', () => resolve(reply));
        conn.on('error', reject);
      });
    const start = (lines: string[]) => `POST /call HTTP/1.1\r\n${lines.map((l) => `${l}\r\n`).join('')}`;
    const auth = () => `authorization: Bearer ${tcp.token}`;
    // The first answer on the connection (a chunked body starts with its length), in JSON with a message.
    const JSON_ERROR = /^HTTP\/1\.1 4\d\d [^\r]*\r\n(?:[^\r]+\r\n)*\r\n(?:[0-9a-f]+\r\n)?\{"error":\{"name":"\w+",(?:"code":"\w+",)?"message":"[^"]{10,}/;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('', start([]), start([auth()]), start([auth(), 'content-length: 5', ''])),
        fc.uint8Array({ minLength: 1, maxLength: 100 }).map((b) => Buffer.from(b).toString('latin1')),
        async (head, tail) => {
          fence = await runningTask(db.pool);
          const sent = executed.length;
          const reply = await raw(Buffer.from(head + tail, 'latin1'));
          expect(reply, JSON.stringify(reply.slice(0, 300))).toMatch(JSON_ERROR);
          expect(reply).not.toMatch(/HTTP\/1\.1 5\d\d/);
          expect(await selectToolCalls(db.pool, fence.taskId)).toEqual([]);
          expect(executed.length).toBe(sent);
        },
      ),
      {
        numRuns: 60,
        examples: [
          ['', 'FOO /call HTTP/1.1\r\n\r\n'],
          [start([auth(), 'content-length: nope']), '\r\n'],
          [start([auth(), 'transfer-encoding: chunked', '']), 'zz\r\n'],
          [start([auth(), 'content-length: 100', '']), '{"tool":"echo","step":"cut-short"'],
          [start([auth(), `x-big: ${'x'.repeat(20_000)}`]), '\r\n'],
        ],
      },
    );
  });
});
