// SPEC U6: what a `baton worker` process tells the systems a team runs it with: structured JSON
// logs carrying graph, task, claim version, worker and agent; OpenTelemetry traces received by a
// real OTLP endpoint (an in-process collector started here) holding a task's spans from claim to
// verification; the Temporal SDK's runtime metrics on its /metrics; search attributes that list a
// graph's workflows in Temporal; and /readyz following Postgres as it stops and starts again.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/dev/embeddedPostgres.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { commitAll, createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { cleanEnv, runCli, startCli } from '../helpers/cli.js';
import { graphVerified } from '../helpers/graphStates.js';
import { usePostgresHomes } from '../helpers/postgresHomes.js';
import { samples, sampleKey, startPrometheus } from '../helpers/prometheus.js';
import { useTaskStack } from '../helpers/taskStack.js';

/** As long as a test may wait for a state: a hang guard, never a timing assertion. */
const HANG_GUARD_MS = 600_000;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

/** An OTLP/HTTP trace receiver (JSON), keeping every span it is sent. */
async function startOtlpReceiver() {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const message = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of message.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `baton worker` as a process of its own (it writes nothing on stdout: its output is its log), and where its ops port is. */
function startWorker(args: string[], env: Record<string, string>) {
  const cli = startCli(['worker', ...args], { ...process.env, ...env });
  return { ...cli, opsUrl: async () => (await cli.waitForOutput(/Metrics: (http:\/\/[\d.]+:\d+)\/metrics/))[1]! };
}

describe('a worker process, observed (SPEC U6)', () => {
  const stack = useTaskStack();
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let worker: ReturnType<typeof startWorker>;
  const identity = `observed-${randomUUID().slice(0, 6)}`;
  const graphId = uniqueGraphId('observed');

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    worker = startWorker(
      [
        '--task-queue',
        stack.temporal.taskQueue,
        '--work-dir',
        await mkdtemp(path.join(tmpdir(), 'baton-observed-')),
        '--ops-port',
        '0',
        '--deployment-metrics',
      ],
      {
        ...stack.workerEnv,
        BATON_WORKER_ID: identity,
        BATON_LOG_LEVEL: 'debug',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_SERVICE_NAME: 'baton-test-worker',
      },
    );
    await worker.opsUrl();
    const repo = await createScriptedRepo();
    // Submitted by `baton submit`, traced too: the graph's trace starts where its workflow is started.
    const graphFile = path.join(await mkdtemp(path.join(tmpdir(), 'baton-observed-graph-')), 'graph.yaml');
    const graph = {
      id: graphId,
      repo,
      policy: { heartbeatTimeoutMs: 10_000 },
      tasks: [
        { key: 'write', run: { command: `echo ok > out.txt && ${commitAll('ok')}`, agent: 'echo-agent' }, verify: 'grep -q ok out.txt' },
      ],
    };
    await writeFile(graphFile, JSON.stringify(graph));
    const submitted = await runCli(
      ['submit', graphFile, '--task-queue', stack.temporal.taskQueue],
      cleanEnv({
        DATABASE_URL: (await stack.db.login('baton_client')).url,
        TEMPORAL_ADDRESS: stack.temporal.address,
        TEMPORAL_NAMESPACE: stack.temporal.namespace,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      }),
    );
    expect(submitted.code, submitted.output).toBe(0);
    await graphVerified(stack.client, graphId);
  }, HANG_GUARD_MS);

  afterAll(async () => {
    worker?.child.kill('SIGTERM');
    await worker?.exited;
    await receiver?.close();
  });

  it('logs one JSON object a line, with graph, task, claim version, worker and agent, the Temporal SDK’s records among them', async () => {
    const parse = () =>
      worker
        .output()
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new Error(`not a JSON record: ${line}`);
          }
        });
    // The verification's record follows its row in Postgres, which the graph's state waited on.
    const records = await waitFor(
      "the verification's record",
      async () => {
        const parsed = parse();
        if (!parsed.some((r) => r.msg === 'verification passed')) throw new Error(worker.output());
        return parsed;
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 100 },
    );
    for (const record of records) {
      expect(record).toMatchObject({
        level: expect.any(String),
        time: expect.any(String),
        msg: expect.any(String),
        component: 'worker',
        worker: identity,
      });
    }
    const task = { graphId, taskKey: 'write', taskId: `${graphId}/write`, claimVersion: 1 };
    expect(records).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'claimed', ...task, worker: identity, agent: 'echo-agent', attempt: 1 }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'submitted', ...task, revision: expect.stringMatching(/^[0-9a-f]{40}$/) }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({
        level: 'info',
        msg: 'verification passed',
        ...task,
        worker: identity,
        verifier: `${identity}/verifier`,
        command: 'grep -q ok out.txt',
      }),
    );
    // The SDK's own records, through the same logger (its INFO at debug).
    expect(records).toContainEqual(expect.objectContaining({ source: 'temporal', level: 'debug' }));
  });

  it('sends a task’s spans from claim to verification, as one trace, to the OTLP endpoint', async () => {
    // Spans leave in batches, a workflow's when it ends: wait until the trace holds every one expected.
    const expected = [
      'StartWorkflow:batonTaskWorkflow',
      'RunWorkflow:batonTaskWorkflow',
      'RunActivity:batonRunTask',
      'baton.task_claim',
      'baton.task_submit',
      'RunActivity:batonVerifyTask',
      'baton.verification_start',
      'baton.verification_record',
    ];
    const trace = await waitFor(
      'the spans of one task from claim to verification, in one trace',
      async () => {
        const recorded = receiver.spans.find((s) => s.name === 'baton.verification_record');
        const spans = recorded ? receiver.spans.filter((s) => s.traceId === recorded.traceId) : [];
        const missing = expected.filter((name) => !spans.some((s) => s.name === name));
        if (missing.length) throw new Error(`missing ${missing.join(', ')}; spans so far: ${receiver.spans.map((s) => s.name).join(', ')}`);
        return spans;
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 200 },
    );
    // Each store call is a child of the activity it ran in, which descends from the task's workflow.
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (span: OtlpSpan) => {
      const chain: string[] = [];
      for (let parent = byId.get(span.parentSpanId ?? ''); parent; parent = byId.get(parent.parentSpanId ?? '')) chain.push(parent.name);
      return chain;
    };
    const claim = trace.find((s) => s.name === 'baton.task_claim')!;
    expect(ancestors(claim)[0]).toBe('RunActivity:batonRunTask');
    expect(ancestors(claim)).toContain('RunWorkflow:batonTaskWorkflow');
    // ... and from the `baton submit` that started it, at the trace's root.
    expect(ancestors(claim).at(-1)).toBe('StartWorkflow:batonTaskWorkflow');
    const recorded = trace.find((s) => s.name === 'baton.verification_record')!;
    expect(ancestors(recorded)[0]).toBe('RunActivity:batonVerifyTask');
    expect(ancestors(recorded)).toContain('RunWorkflow:batonTaskWorkflow');
  });

  it('serves the Temporal SDK’s runtime metrics with its own on /metrics, every one the Grafana dashboard queries among them', async () => {
    const text = await (await fetch(`${await worker.opsUrl()}/metrics`)).text();
    const metrics = samples(text);
    expect(metrics.get(sampleKey('baton_metrics_source_up', { source: 'temporal_runtime' }))).toBe(1);
    expect(metrics.get(sampleKey('baton_metrics_source_up', { source: 'event_log' }))).toBe(1);
    expect(metrics.get(sampleKey('baton_events_total', { subject: 'task', kind: 'verified' }))).toBe(1);
    // Every metric and grouping label of the dashboard in docs/ is one a worker (or serve: same registry) exports.
    const types = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const labelsOf = (name: string) =>
      new Set(
        [...text.matchAll(new RegExp(`^${name}(?:_bucket|_sum|_count)?\\{([^}]*)\\}`, 'gm'))].flatMap((m) =>
          [...m[1]!.matchAll(/(\w+)="/g)].map((l) => l[1]!),
        ),
      );
    const dashboard = JSON.parse(await readFile(new URL('../../docs/grafana/baton-dashboard.json', import.meta.url), 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    expect(exprs.length).toBeGreaterThan(20);
    for (const { panel, expr } of exprs) {
      const names = [...expr.matchAll(/\b((?:baton|temporal|process|nodejs)_[a-z0-9_]+)/g)].map((m) =>
        m[1]!.replace(/_(bucket|sum|count)$/, ''),
      );
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(types, `${panel}: ${name} is not exported`).toContain(name);
      const grouped = [...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim())).filter((l) => l !== 'le');
      // (A gauge with no sample yet, such as the pool offers of a deployment without pools, shows no labels.)
      const sampled = names.filter((name) => labelsOf(name).size > 0);
      for (const label of grouped)
        expect(
          sampled.length === 0 || sampled.some((name) => labelsOf(name).has(label)),
          `${panel}: no metric of ${names.join(', ')} has the label ${label} (they have ${sampled.flatMap((n) => [...labelsOf(n)]).join(', ')})`,
        ).toBe(true);
    }

    // And a real Prometheus, scraping this worker, evaluates every query of the dashboard: valid
    // PromQL, with a result wherever the worker has samples of what it asks for.
    const prometheus = await startPrometheus([new URL(await worker.opsUrl()).host]);
    try {
      await waitFor(
        'three scrapes of the worker',
        async () => {
          const { data } = await prometheus.query('count_over_time(baton_claims_total[1m])');
          const scrapes = Number((data?.result[0] as { value?: [number, string] } | undefined)?.value?.[1] ?? 0);
          if (scrapes < 3) throw new Error(`${scrapes} scrapes so far`);
        },
        { timeoutMs: HANG_GUARD_MS, intervalMs: 250 },
      );
      const hasSamples = (name: string) => new RegExp(`^${name}(?:_bucket|_sum|_count)?[{ ]`, 'm').test(text);
      for (const { panel, expr } of exprs) {
        const answer = await prometheus.query(expr);
        expect(answer, `${panel}: ${expr}`).toMatchObject({ status: 'success' });
        const names = [...expr.matchAll(/\b((?:baton|temporal|process|nodejs)_[a-z0-9_]+)/g)].map((m) =>
          m[1]!.replace(/_(bucket|sum|count)$/, ''),
        );
        if (names.every(hasSamples)) expect(answer.data!.result.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      }
    } finally {
      await prometheus.stop();
    }
  });

  it('gives its workflows search attributes: Temporal lists a graph’s workflows, and a task’s status', async () => {
    const listed = await waitFor(
      "Temporal's visibility to list the graph's workflows",
      async () => {
        const found: { workflowId: string; status?: unknown }[] = [];
        for await (const execution of stack.temporal.client.workflow.list({ query: `BatonGraphId = "${graphId}"` }))
          found.push({ workflowId: execution.workflowId, status: execution.searchAttributes.BatonTaskStatus });
        if (!found.some((w) => JSON.stringify(w.status) === '["verified"]')) throw new Error(JSON.stringify(found));
        return found;
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 500 },
    );
    expect(listed.map((w) => w.workflowId)).toEqual([`baton-task:${graphId}/write`]);
    // The start shows `ready` (no command of the workflow's own), and the workflow records no patch
    // marker (nor its TemporalChangeVersion upsert): its one upsert is the status it ended in.
    const events = (await stack.temporal.client.workflow.getHandle(`baton-task:${graphId}/write`).fetchHistory()).events ?? [];
    const shown = (fields: Record<string, { data?: Uint8Array | null }> | null | undefined) =>
      Object.fromEntries(
        Object.entries(fields ?? {}).map(([name, payload]) => [name, JSON.parse(Buffer.from(payload.data ?? []).toString())]),
      );
    expect(shown(events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields)).toMatchObject({
      BatonTaskStatus: 'ready',
    });
    expect(events.filter((e) => e.markerRecordedEventAttributes)).toEqual([]);
    expect(
      events
        .filter((e) => e.upsertWorkflowSearchAttributesEventAttributes)
        .map((e) => shown(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields)),
    ).toEqual([{ BatonTaskStatus: 'verified' }]);
  });
});

describe('/readyz of a worker whose Postgres stops (SPEC U6)', () => {
  const homes = usePostgresHomes('baton-readyz');

  it('turns unready, naming Postgres, while it is down, and ready again once it is back, the worker running throughout', async () => {
    const dataDir = path.join(await homes(), 'data');
    let postgres = await startEmbeddedPostgres({ dataDir });
    const worker = startWorker(
      ['--task-queue', `readyz-${randomUUID()}`, '--ops-port', '0', '--work-dir', path.join(dataDir, '..', 'work')],
      {
        DATABASE_URL: postgres.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      },
    );
    try {
      const ops = await worker.opsUrl();
      // Without --deployment-metrics a worker exports its own metrics only: the deployment's have one exporter (baton serve).
      const own = await (await fetch(`${ops}/metrics`)).text();
      expect(own).toMatch(/^process_cpu_seconds_total /m);
      expect(own).not.toMatch(/^baton_events_total/m);
      const readiness = async () => {
        const response = await fetch(`${ops}/readyz`);
        return { status: response.status, body: (await response.json()) as { checks: Record<string, { ok: boolean; error?: string }> } };
      };
      const until = (what: string, status: number) =>
        waitFor(
          what,
          async () => {
            const now = await readiness();
            if (now.status !== status) throw new Error(JSON.stringify(now));
            return now;
          },
          { timeoutMs: HANG_GUARD_MS, intervalMs: 200 },
        );
      await until('ready', 200);
      await postgres.stop();
      const down = await until('unready with Postgres stopped', 503);
      expect(down.body.checks.postgres!.ok).toBe(false);
      expect(down.body.checks.postgres!.error).toBeTruthy();
      expect(down.body.checks.temporal).toEqual({ ok: true });
      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      postgres = await startEmbeddedPostgres({ dataDir, port: postgres.port, secretFile: postgres.secretFile });
      const up = await until('ready again', 200);
      expect(up.body.checks).toEqual({ postgres: { ok: true }, temporal: { ok: true } });
      expect(worker.child.exitCode).toBeNull();
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await postgres.stop();
    }
  });
});
