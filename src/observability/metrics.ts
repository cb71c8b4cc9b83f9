// SPEC U6: the Prometheus metrics of a baton process (docs/observability.md lists them).
// - Deployment metrics come from the event log (src/db/functions/metrics.sql): counters that match
//   the log exactly and survive any process, the same from every exporter (`baton serve` exports
//   them; a worker does when asked), read at each scrape from where the last one stopped.
// - Process metrics are this process's own: Node's, the agent API's calls, and the Temporal SDK's
//   runtime metrics (its own Prometheus exporter on a loopback port, served here with the rest).
import client from 'prom-client';
import type { Queryable } from '../db/queryable.js';
import type { ApiCallObserver } from '../api/httpHandler.js';
import type { Log } from '../log.js';
import { TASK_STATUSES } from '../tasks/states.js';
import { createEventLogReader, type MetricsEvent } from './eventLogReader.js';

/** Seconds from a claim to the verification of its work: agent runs last from seconds to a day. */
const CLAIM_TO_VERIFIED_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200, 14_400, 43_200, 86_400];
/** Seconds from a silent owner's last heartbeat to its task's reclaim: a few heartbeat timeouts at most. */
const RECOVERY_BUCKETS = [0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 300, 600];
const API_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface BatonMetrics {
  readonly registry: client.Registry;
  /** The exposition text of every metric, the deployment's read from the log first. */
  scrape(): Promise<string>;
  /** What the agent API reports its calls to. */
  readonly apiCalls: ApiCallObserver;
  /** Adds the deployment metrics, read from `db`'s event log at each scrape (once per process). */
  exportDeployment(db: Queryable): void;
}

export interface BatonMetricsOptions {
  /** Where the Temporal SDK's runtime serves its Prometheus metrics, to include them. (Default: none) */
  temporalRuntimeUrl?: string;
  /** Where a failed read of the log or of the runtime's metrics is reported. */
  log: Log;
}

export function createBatonMetrics(options: BatonMetricsOptions): BatonMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const apiRequests = new client.Counter({
    name: 'baton_api_requests_total',
    help: "Calls the agent API answered in this process, by operation (mcp: refused before a tool was named) and outcome (ok, or the error's code)",
    labelNames: ['operation', 'outcome'],
    registers: [registry],
  });
  const apiDuration = new client.Histogram({
    name: 'baton_api_request_duration_seconds',
    help: 'Time the agent API took to answer a call in this process, by operation',
    labelNames: ['operation'],
    buckets: API_DURATION_BUCKETS,
    registers: [registry],
  });
  let refreshDeployment: (() => Promise<void>) | undefined;
  const sourceUp = new client.Gauge({
    name: 'baton_metrics_source_up',
    help: 'Whether the last scrape read its source (event_log: the deployment metrics; temporal_runtime: the SDK runtime metrics)',
    labelNames: ['source'],
    registers: [registry],
  });
  return {
    registry,
    apiCalls(operation, outcome, seconds) {
      apiRequests.inc({ operation, outcome });
      apiDuration.observe({ operation }, seconds);
    },
    exportDeployment(db) {
      if (refreshDeployment) throw new Error('the deployment metrics are exported once per process');
      refreshDeployment = deploymentMetrics(db, registry);
    },
    async scrape() {
      if (refreshDeployment)
        sourceUp.set(
          { source: 'event_log' },
          await refreshDeployment().then(
            () => 1,
            (error: unknown) => (options.log(`metrics: the event log could not be read: ${errorText(error)}`), 0),
          ),
        );
      const runtime = options.temporalRuntimeUrl ? await temporalRuntimeMetrics(options.temporalRuntimeUrl, options.log) : undefined;
      if (options.temporalRuntimeUrl) sourceUp.set({ source: 'temporal_runtime' }, runtime === undefined ? 0 : 1);
      const own = await registry.metrics();
      return runtime ? `${own}\n${runtime}` : own;
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function temporalRuntimeMetrics(url: string, log: Log): Promise<string | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.text();
  } catch (error) {
    log(`metrics: the Temporal SDK's runtime metrics at ${url} could not be read: ${errorText(error)}`);
    return undefined;
  }
}

/** Registers the deployment metrics on `registry`; the function returned brings them up to date with the log. */
function deploymentMetrics(db: Queryable, registry: client.Registry): () => Promise<void> {
  const registers = [registry];
  const events = new client.Counter({
    name: 'baton_events_total',
    help: 'Events in the log, by subject (task, object, graph, agent) and kind',
    labelNames: ['subject', 'kind'],
    registers,
  });
  const claims = new client.Counter({ name: 'baton_claims_total', help: 'Tasks claimed (each claim bumps its claim version)', registers });
  const reclaims = new client.Counter({
    name: 'baton_reclaims_after_silence_total',
    help: 'Claims taken back from an owner that went silent (its heartbeats stopped)',
    registers,
  });
  const staleWrites = new client.Counter({
    name: 'baton_stale_writes_refused_total',
    help: "Writes refused because the writer's claim or view was stale, by subject and the action refused",
    labelNames: ['subject', 'action'],
    registers,
  });
  const verifications = new client.Counter({
    name: 'baton_verifications_total',
    help: 'Verifications recorded, by outcome (passed, failed)',
    labelNames: ['outcome'],
    registers,
  });
  const toolCalls = new client.Counter({
    name: 'baton_tool_calls_total',
    help: 'Steps of external tool calls in the ledger, by outcome (recorded, started, succeeded, failed, uncertain, reconciled, unresolved)',
    labelNames: ['outcome'],
    registers,
  });
  const takeovers = new client.Counter({
    name: 'baton_object_takeovers_total',
    help: 'Shared objects taken over from a silent holder',
    registers,
  });
  const objectRefusals = new client.Counter({
    name: 'baton_object_refusals_total',
    help: 'Calls on shared objects refused, by refusal and operation',
    labelNames: ['refusal', 'operation'],
    registers,
  });
  const apiRefusals = new client.Counter({
    name: 'baton_api_refusals_total',
    help: 'Agent API calls refused and recorded in the log, by refusal and operation (made-up tokens are recorded in summaries, counted here one by one)',
    labelNames: ['refusal', 'operation'],
    registers,
  });
  const claimToVerified = new client.Histogram({
    name: 'baton_claim_to_verified_seconds',
    help: 'Time from a claim to the verification that passed its work',
    buckets: CLAIM_TO_VERIFIED_BUCKETS,
    registers,
  });
  const recovery = new client.Histogram({
    name: 'baton_recovery_seconds',
    help: "Time from a silent owner's last heartbeat to its task's reclaim",
    buckets: RECOVERY_BUCKETS,
    registers,
  });
  const tasks = new client.Gauge({
    name: 'baton_tasks',
    help: 'Tasks by status now (ready: waiting for a worker)',
    labelNames: ['status'],
    registers,
  });
  const poolOffers = new client.Gauge({
    name: 'baton_pool_offers_waiting',
    help: 'Runs offered to an agent pool that no agent has taken yet, by pool',
    labelNames: ['pool'],
    registers,
  });

  function count(event: MetricsEvent): void {
    const { subject_kind: subject, kind, labels, amount, seconds } = event;
    events.inc({ subject, kind }, amount);
    if (subject === 'task') {
      if (kind === 'claimed') claims.inc();
      else if (kind === 'reclaimed_after_silence') {
        reclaims.inc();
        if (seconds !== null) recovery.observe(seconds);
      } else if (kind === 'verified') {
        verifications.inc({ outcome: 'passed' });
        if (seconds !== null) claimToVerified.observe(seconds);
      } else if (kind === 'rejected') verifications.inc({ outcome: 'failed' });
      else if (kind.startsWith('tool_call_')) toolCalls.inc({ outcome: kind.slice('tool_call_'.length) });
      if (kind === 'stale_write_refused') staleWrites.inc({ subject, action: labels.action ?? 'unknown' });
    } else if (subject === 'object') {
      if (kind === 'overtaken') takeovers.inc();
      if (labels.refusal) objectRefusals.inc({ refusal: labels.refusal, operation: labels.operation ?? 'none' });
      if (kind === 'stale_write_refused') staleWrites.inc({ subject, action: labels.operation ?? 'unknown' });
    } else if (subject === 'agent' && kind === 'api_refused') {
      apiRefusals.inc({ refusal: labels.refusal ?? 'unknown', operation: labels.operation ?? 'none' }, amount);
    }
  }

  const reader = createEventLogReader(db);
  const refresh = async () => {
    await reader.read(count);
    const { rows } = await db.query<{ name: string; labels: Record<string, string>; value: string | number }>(
      'SELECT name, labels, value FROM baton.metrics_gauges()',
    );
    tasks.reset();
    poolOffers.reset();
    for (const status of TASK_STATUSES) tasks.set({ status }, 0);
    for (const { name, labels, value } of rows) {
      if (name === 'tasks') tasks.set({ status: labels.status }, Number(value));
      else poolOffers.set({ pool: labels.pool }, Number(value));
    }
  };
  // Scrapes that come together share one read of the log.
  let reading: Promise<void> | undefined;
  return () =>
    (reading ??= refresh().finally(() => {
      reading = undefined;
    }));
}
