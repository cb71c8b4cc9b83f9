// observability: what metrics and logs cost a lifecycle (SPEC U6). Two baton workers in their own
// processes, one observed as `baton worker --ops-port --deployment-metrics` observes one (JSON logs
// at info through pino, the Temporal SDK's records and runtime metrics included, the deployment
// metrics read from the event log) and scraped every second, one with the SDK's default logger at
// WARN and nothing else; the same lifecycles run on each, interleaved. Tracing stays off on both (its
// default); its cost depends on the collector.
import { createBatonClient } from '../src/client.js';
import type { BenchContext } from './context.js';
import { interleave } from './interleave.js';
import { batonLifecycles } from './lifecycle.js';
import { spread } from './stats.js';
import { startBenchWorker } from './workerProcess.js';

/** How often the observed worker is scraped: every second, fifteen times Prometheus's default. */
const SCRAPE_INTERVAL_MS = 1_000;

export async function runObservabilityBench(ctx: BenchContext, options: { pairs: number; count: number; concurrency: number }) {
  const { stack, log } = ctx;
  const queue = (side: string) => `${ctx.runId}-observability-${side}`;
  const worker = (side: 'observed' | 'plain') =>
    startBenchWorker(
      {
        kind: 'baton',
        taskQueue: queue(side),
        identity: `observability-${side}-worker`,
        workflowBundlePath: ctx.bundles.baton,
        slowSteps: 0,
        slowStepMs: 0,
        observed: side === 'observed',
      },
      ctx.stack.workerEnv,
    );
  const [observed, plain] = await Promise.all([worker('observed'), worker('plain')]);
  let scrapes = 0;
  let scrapeBytes = 0;
  const scraping = setInterval(() => {
    void fetch(`${observed.opsUrl}/metrics`)
      .then((r) => r.text())
      .then((text) => {
        scrapes += 1;
        scrapeBytes = text.length;
      })
      .catch((error: unknown) => log(`  observability: scrape failed: ${String(error)}`));
  }, SCRAPE_INTERVAL_MS);
  try {
    const client = (side: 'observed' | 'plain') => createBatonClient({ db: stack.pool, temporal: stack.temporal, taskQueue: queue(side) });
    const [observedClient, plainClient] = [client('observed'), client('plain')];
    const pairs = await interleave(
      'observability',
      options.pairs,
      {
        candidate: (r) => batonLifecycles(observedClient, options, `${ctx.runId}-obs${r + 1}`),
        baseline: (r) => batonLifecycles(plainClient, options, `${ctx.runId}-plain${r + 1}`),
      },
      log,
      (p) => `observed ${p.candidate.perSecond.toFixed(1)}/s, plain ${p.baseline.perSecond.toFixed(1)}/s`,
    );
    const logLines = observed
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{')).length;
    return {
      lifecyclesPerRound: options.count,
      concurrency: options.concurrency,
      scrapeIntervalMs: SCRAPE_INTERVAL_MS,
      scrapes,
      scrapeBytes,
      /** JSON records in the last 20,000 characters the observed worker wrote: a sample that they were written. */
      logRecordsSeen: logLines,
      throughputRatio: spread(pairs.map((p) => p.candidate.perSecond / p.baseline.perSecond)),
      p50Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p50 / p.baseline.latencyMs.p50)),
      p99Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p99 / p.baseline.latencyMs.p99)),
    };
  } finally {
    clearInterval(scraping);
    await Promise.all([observed.stop(), plain.stop()]);
  }
}
