// SPEC U6: the metrics a deployment is run on. The deployment's counters are read from the event
// log, so after the README demo (a worker killed, one frozen, a verification rejected, a tool call
// reconciled) a scrape of `baton serve` matches the log exactly, though the processes that did the
// work are gone. Real Postgres, real Temporal, real processes.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentTokenCreate } from '../../src/api/tokens.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { createEventLogReader } from '../../src/observability/eventLogReader.js';
import { TASK_STATUSES } from '../../src/tasks/states.js';
import { cleanEnv, runCli, startCli, type CliProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { sampleKey, samples } from '../helpers/prometheus.js';

/** As long as a test may run: a hang guard, never a timing assertion. */
const HANG_GUARD_MS = 600_000;

let db: TestDatabase;
let serve: CliProcess;
let opsUrl: string;
let apiUrl: string;

const scrape = async () => {
  const response = await fetch(`${opsUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return samples(await response.text());
};
const rows = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) => (await db.pool.query<R>(sql, values)).rows;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  const demo = await runCli(['demo'], cleanEnv({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress') }));
  expect(demo.code, demo.output).toBe(0);
  const agent = await db.login('baton_agent');
  serve = startCli(
    ['serve', '--port', '0', '--ops-port', '0'],
    cleanEnv({ DATABASE_URL: agent.url, TEMPORAL_ADDRESS: inject('temporalAddress'), BATON_LOG_FORMAT: 'json' }),
  );
  opsUrl = (await serve.waitForOutput(/Metrics: (http:\/\/[\d.]+:\d+)\/metrics/))[1]!;
  apiUrl = (await serve.waitForOutput(/baton agent API on (http:\/\/[\d.]+:\d+)/))[1]!;
}, HANG_GUARD_MS);

afterAll(async () => {
  serve?.child.kill('SIGTERM');
  await serve?.exited;
  await db?.drop();
});

describe('the deployment metrics, read from the event log (SPEC U6)', () => {
  it('match the event log exactly after a run with a kill, a frozen worker and a rejection, scrape after scrape', async () => {
    const metrics = await scrape();
    expect(metrics.get(sampleKey('baton_metrics_source_up', { source: 'event_log' }))).toBe(1);

    // Every event, by subject and kind; and nothing else counted.
    const byKind = await rows<{ subject: string; kind: string; n: number }>(
      'SELECT subject_kind AS subject, kind, count(*)::int AS n FROM baton.events GROUP BY 1, 2',
    );
    for (const { subject, kind, n } of byKind)
      expect(metrics.get(sampleKey('baton_events_total', { subject, kind })), `${subject} ${kind}`).toBe(n);
    const counted = [...metrics].filter(([key]) => key.startsWith('baton_events_total{')).reduce((sum, [, v]) => sum + v, 0);
    expect(counted).toBe(byKind.reduce((sum, r) => sum + r.n, 0));

    const count = async (where: string) => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM baton.events WHERE ${where}`))[0]!.n;
    // What the demo is known to do, so an empty log could not pass by matching zeros.
    expect(await count(`kind = 'reclaimed_after_silence'`)).toBeGreaterThanOrEqual(2);
    expect(await count(`kind = 'rejected'`)).toBeGreaterThanOrEqual(1);
    expect(await count(`kind = 'stale_write_refused'`)).toBeGreaterThanOrEqual(1);
    expect(await count(`kind = 'tool_call_reconciled'`)).toBe(1);

    expect(metrics.get('baton_claims_total')).toBe(await count(`subject_kind = 'task' AND kind = 'claimed'`));
    expect(metrics.get('baton_reclaims_after_silence_total')).toBe(await count(`kind = 'reclaimed_after_silence'`));
    expect(metrics.get(sampleKey('baton_verifications_total', { outcome: 'passed' }))).toBe(await count(`kind = 'verified'`));
    expect(metrics.get(sampleKey('baton_verifications_total', { outcome: 'failed' }))).toBe(await count(`kind = 'rejected'`));
    for (const { action, n } of await rows<{ action: string; n: number }>(
      `SELECT details->>'action' AS action, count(*)::int AS n FROM baton.events
        WHERE subject_kind = 'task' AND kind = 'stale_write_refused' GROUP BY 1`,
    ))
      expect(metrics.get(sampleKey('baton_stale_writes_refused_total', { subject: 'task', action }))).toBe(n);
    for (const { kind, n } of byKind.filter((r) => r.kind.startsWith('tool_call_')))
      expect(metrics.get(sampleKey('baton_tool_calls_total', { outcome: kind.slice('tool_call_'.length) }))).toBe(n);

    // Durations, worked out here from the rows themselves: claim → verified of the same claim version,
    // and a silent owner's last heartbeat → its reclaim.
    const [verified] = await rows<{ n: number; seconds: number }>(
      `SELECT count(*)::int AS n, sum(extract(epoch FROM v.at - c.at))::float8 AS seconds
         FROM baton.events v JOIN baton.events c
           ON c.subject_kind = 'task' AND c.subject_id = v.subject_id AND c.kind = 'claimed' AND c.fence = v.fence
        WHERE v.subject_kind = 'task' AND v.kind = 'verified'`,
    );
    expect(metrics.get('baton_claim_to_verified_seconds_count')).toBe(verified!.n);
    expect(metrics.get('baton_claim_to_verified_seconds_sum')).toBeCloseTo(verified!.seconds, 3);
    const [recovered] = await rows<{ n: number; seconds: number }>(
      `SELECT count(*)::int AS n, sum(extract(epoch FROM e.at - (h.heartbeat_at)))::float8 AS seconds
         FROM baton.events e, LATERAL (SELECT (e.details->>'silent_since')::timestamptz AS heartbeat_at) h
        WHERE e.kind = 'reclaimed_after_silence'`,
    );
    expect(metrics.get('baton_recovery_seconds_count')).toBe(recovered!.n);
    expect(metrics.get('baton_recovery_seconds_sum')).toBeCloseTo(recovered!.seconds, 3);
    // A recovery is measured from a real heartbeat, before the reclaim.
    expect(recovered!.seconds).toBeGreaterThan(0);

    // What is there now.
    const statuses = await rows<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM baton.tasks GROUP BY 1');
    for (const status of TASK_STATUSES)
      expect(metrics.get(sampleKey('baton_tasks', { status }))).toBe(statuses.find((s) => s.status === status)?.n ?? 0);

    // A second scrape reads only what is new: nothing is counted twice.
    const again = await scrape();
    for (const [key, value] of metrics) if (key.startsWith('baton_events_total')) expect(again.get(key), key).toBe(value);
  });

  it('count the API calls this server answered, and the refusals the log recorded', async () => {
    const reader = await agentTokenCreate(db.pool, { identity: 'metrics-reader', scopes: ['read'], createdBy: 'test' });
    const viewer = await agentTokenCreate(db.pool, { identity: 'metrics-viewer', scopes: ['view'], createdBy: 'test' });
    const call = (secret: string | undefined) =>
      fetch(`${apiUrl}/v1/graphs.list`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
        body: '{}',
      });
    expect((await call(viewer.secret)).status).toBe(200);
    const refused = await call(reader.secret);
    expect(refused.status).toBe(403);
    const refusal = ((await refused.json()) as { code: string }).code;
    expect((await call(undefined)).status).toBe(401);

    const metrics = await scrape();
    const requests = (outcome: string) => metrics.get(sampleKey('baton_api_requests_total', { operation: 'graphs.list', outcome }));
    expect(requests('ok')).toBe(1);
    expect(requests(refusal)).toBe(1);
    expect(requests('unauthenticated')).toBe(1);
    expect(metrics.get(sampleKey('baton_api_request_duration_seconds_count', { operation: 'graphs.list' }))).toBe(3);
    // The refusal of a token baton issued is an event; the metric is the log's count of it.
    const recorded = await rows<{ refusal: string; operation: string; n: number }>(
      `SELECT details->>'refusal' AS refusal, details->>'operation' AS operation, count(*)::int AS n
         FROM baton.events WHERE kind = 'api_refused' GROUP BY 1, 2`,
    );
    expect(recorded).toContainEqual(expect.objectContaining({ operation: 'graphs.list', n: 1 }));
    for (const { refusal: r, operation, n } of recorded)
      expect(metrics.get(sampleKey('baton_api_refusals_total', { refusal: r, operation }))).toBe(n);
  });
});

describe('/healthz and /readyz (SPEC U6)', () => {
  it('are ready while Postgres holds the schema this baton needs, and unready, saying why, while it does not', async () => {
    const ready = async () => {
      const response = await fetch(`${opsUrl}/readyz`);
      return {
        status: response.status,
        body: (await response.json()) as { ok: boolean; checks: Record<string, { ok: boolean; error?: string }> },
      };
    };
    expect((await fetch(`${opsUrl}/healthz`)).status).toBe(200);
    expect(await ready()).toEqual({ status: 200, body: { ok: true, checks: { postgres: { ok: true }, temporal: { ok: true } } } });
    // A definition file this baton ships that the database does not hold as it is: not ready.
    const { checksum } = (await rows<{ checksum: string }>(`SELECT checksum FROM baton.definitions WHERE file = 'metrics.sql'`))[0]!;
    await db.pool.query(`UPDATE baton.definitions SET checksum = 'changed' WHERE file = 'metrics.sql'`);
    try {
      const unready = await ready();
      expect(unready.status).toBe(503);
      expect(unready.body.checks.postgres).toEqual({ ok: false, error: expect.stringContaining('functions/metrics.sql') });
      expect(unready.body.checks.temporal).toEqual({ ok: true });
    } finally {
      await db.pool.query(`UPDATE baton.definitions SET checksum = $1 WHERE file = 'metrics.sql'`, [checksum]);
    }
    expect((await ready()).status).toBe(200);
  });
});

describe('the event log reader', () => {
  /** Appends one event in `client`'s transaction and returns its id. */
  const append = async (client: pg.PoolClient | pg.Pool, subject: string) =>
    (await client.query<{ id: number }>(`SELECT baton.event_append('graph', $1, 'probe', 'test') AS id`, [subject])).rows[0]!.id;

  it('hands over an event that commits after a later one, exactly once (a cursor that only moves forward misses it)', async () => {
    const reader = createEventLogReader(db.pool);
    const handed: number[] = [];
    const read = () => reader.read((event) => handed.push(event.id));
    await read();
    // The naive way: everything after the highest id seen so far.
    let cursor = (await rows<{ id: number }>('SELECT coalesce(max(id), 0)::int AS id FROM baton.events'))[0]!.id;
    const naive: number[] = [];
    const readNaively = async () => {
      for (const { id } of await rows<{ id: number }>('SELECT id::int FROM baton.events WHERE id > $1 ORDER BY id', [cursor])) {
        naive.push(id);
        cursor = id;
      }
    };
    handed.length = 0;

    const late = await db.pool.connect();
    try {
      await late.query('BEGIN');
      const first = await append(late, 'late-committer'); // numbered first, committed last
      const second = await append(db.pool, 'early-committer');
      expect(second).toBeGreaterThan(first);
      await read();
      await readNaively();
      expect(handed).toEqual([second]);
      await late.query('COMMIT');
      await read();
      await readNaively();
      expect(handed.sort((a, b) => a - b)).toEqual([first, second]);
      // The control: the forward-only cursor had passed the late event's number before it committed.
      expect(naive).toEqual([second]);
      // Reads after that hand over nothing again, however often they run.
      await read();
      await read();
      expect(handed).toHaveLength(2);
    } finally {
      late.release();
    }
  });

  it('reads a log longer than one page, and one longer than a read’s budget over several reads, each event once', async () => {
    const before = (await rows<{ n: number }>('SELECT count(*)::int AS n FROM baton.events'))[0]!.n;
    await db.pool.query(`SELECT baton.event_append('graph', 'bulk-' || i, 'probe', 'test') FROM generate_series(1, 12000) AS i`);
    const reader = createEventLogReader(db.pool);
    let handed = 0;
    const ids = new Set<number>();
    const count = (event: { id: number }) => {
      handed += 1;
      ids.add(event.id);
    };
    const first = await reader.read(count, 6_000);
    expect(first).toBeLessThan(before + 12_000);
    await waitFor(
      'the rest of the log',
      async () => {
        await reader.read(count, 6_000);
        if (handed < before + 12_000) throw new Error(`${handed} of ${before + 12_000} handed over`);
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 0 },
    );
    expect(handed).toBe(before + 12_000);
    expect(ids.size).toBe(handed);
  });
});
