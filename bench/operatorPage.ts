// What the operator's page costs in a real browser (issue 23): a 2,000-task graph's page against a
// 20-task one, interleaved in one process (../shared/BENCH.md), in Chromium driven by
// playwright-core, each load in a fresh browser context. Per load: the time from navigation to the
// task table's first row and to every task drawn in the DAG (laid out off the main thread), the
// longest main-thread task meanwhile (how long the page could not answer a key or a click), and
// after a garbage collection the JS heap in use and the DOM's node count.
// Needs DATABASE_URL of a login that may create databases and roles (as the test suite's), a
// built page (npm run build) and Chromium (apt-get install chromium, or BATON_CHROMIUM).
// Usage: npx tsx bench/operatorPage.ts [--pairs 7] [--tasks 2000] [--baseline-tasks 20] [--out dir] [--screenshot file.png]
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { chromium, type Browser } from 'playwright-core';
import { createAgentApi } from '../src/api/agentApi.js';
import { startAgentServer } from '../src/api/agentServer.js';
import { loadOperatorPage } from '../src/api/operatorPage.js';
import { agentTokenCreate } from '../src/api/tokens.js';
import { parsePositiveInt } from '../src/cli/options.js';
import { stderrLog } from '../src/log.js';
import { chromiumLaunchOptions } from '../src/testkit/browser.js';
import { insertGraph } from '../src/testkit/graphs.js';
import { interleave } from './interleave.js';
import { withScratchAgentDatabase } from './scratchDatabase.js';
import { round, spread } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

const opts = new Command()
  .name('npx tsx bench/operatorPage.ts')
  .option('--pairs <n>', 'measured pairs after the warm-up', parsePositiveInt, 7)
  .option('--tasks <n>', 'tasks of the large graph', parsePositiveInt, 2_000)
  .option('--baseline-tasks <n>', 'tasks of the baseline graph', parsePositiveInt, 20)
  .option('--out <dir>', 'where operator-page.json and operator-page.md go', RESULTS_DIR)
  .option('--screenshot <file>', "a PNG of the large graph's page, once it is drawn")
  .parse()
  .opts<{ pairs: number; tasks: number; baselineTasks: number; out: string; screenshot?: string }>();
const log = stderrLog;

/** A layered DAG of `n` tasks: each depends on up to two of the 40 before it, as a big graph's tiers do. */
function layeredGraph(n: number): Record<string, string[]> {
  const key = (i: number) => `t${String(i).padStart(5, '0')}`;
  const tasks: Record<string, string[]> = {};
  for (let i = 0; i < n; i++) {
    const deps = new Set<string>();
    if (i >= 10) for (let d = 0; d < 2; d++) deps.add(key(Math.max(0, i - 10 - ((i * 7 + d * 13) % 30))));
    tasks[key(i)] = [...deps];
  }
  return tasks;
}

interface Load {
  tableMs: number;
  dagMs: number;
  longestTaskMs: number;
  heapMb: number;
  domNodes: number;
}

/** One load of the graph's page in a fresh context: the times from navigation, the longest main-thread task, the heap after a GC. */
async function loadPage(browser: Browser, url: string, tasks: number, screenshot?: string): Promise<Load> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(300_000);
  // Every main-thread task over 50 ms, from the first script on.
  await page.addInitScript(
    'window.longTasks = []; new PerformanceObserver((list) => { for (const e of list.getEntries()) window.longTasks.push(e.duration); }).observe({ entryTypes: ["longtask"] });',
  );
  await page.goto(url);
  await page.locator('tr[data-task]').first().waitFor();
  const tableMs = (await page.evaluate('performance.now()')) as number;
  // The layout places every node at once: the last one drawn means all are.
  await page
    .locator('.dag-node')
    .nth(tasks - 1)
    .waitFor({ state: 'attached' });
  if ((await page.locator('.dag-node').count()) !== tasks)
    throw new Error(`the DAG drew ${await page.locator('.dag-node').count()} of ${tasks} tasks`);
  const dagMs = (await page.evaluate('performance.now()')) as number;
  const longestTaskMs = (await page.evaluate('Math.max(0, ...window.longTasks)')) as number;
  if (screenshot) await page.screenshot({ path: screenshot });
  const cdp = await context.newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const metric = (name: string) => metrics.find((m) => m.name === name)?.value ?? NaN;
  await context.close();
  return { tableMs, dagMs, longestTaskMs, heapMb: metric('JSHeapUsedSize') / 2 ** 20, domNodes: metric('Nodes') };
}

await withScratchAgentDatabase('baton_bench_page', async ({ admin, agent: pool }) => {
  const { secret } = await agentTokenCreate(admin, { identity: 'bench-reader', scopes: ['read'], createdBy: 'bench' });
  const api = createAgentApi({ db: pool, page: await loadOperatorPage({}), rateLimit: { perSecond: 1e6, burst: 1e6 } });
  const server = await startAgentServer(api, { port: 0, host: '127.0.0.1' });
  log(`submitting graphs of ${opts.tasks} and ${opts.baselineTasks} tasks`);
  const large = await insertGraph(admin, layeredGraph(opts.tasks), { prefix: 'bench-large' });
  const small = await insertGraph(admin, layeredGraph(opts.baselineTasks), { prefix: 'bench-small' });
  const urlOf = (graphId: string) => `${server.url}/ui/#token=${encodeURIComponent(secret)}&/graph/${graphId}`;
  const browser = await chromium.launch(chromiumLaunchOptions());
  const version = browser.version();
  try {
    const pairs = await interleave(
      `operator page: ${opts.tasks} vs ${opts.baselineTasks} tasks`,
      opts.pairs,
      {
        candidate: () => loadPage(browser, urlOf(large), opts.tasks, opts.screenshot),
        baseline: () => loadPage(browser, urlOf(small), opts.baselineTasks),
      },
      log,
      (p) =>
        `table ${round(p.candidate.tableMs)} / ${round(p.baseline.tableMs)} ms, DAG ${round(p.candidate.dagMs)} / ${round(p.baseline.dagMs)} ms`,
    );
    const median = (side: 'candidate' | 'baseline', field: keyof Load) => spread(pairs.map((p) => p[side][field])).median;
    const ratio = (field: keyof Load) => spread(pairs.map((p) => p.candidate[field] / p.baseline[field]));
    const rows = (
      [
        ['task table shown, ms from navigation', 'tableMs'],
        ['every task drawn in the DAG, ms from navigation', 'dagMs'],
        ['longest main-thread task during the load, ms', 'longestTaskMs'],
        ['JS heap in use after GC, MiB', 'heapMb'],
        ['DOM nodes', 'domNodes'],
      ] as const
    ).map(([label, field]) => {
      const r = ratio(field);
      return { label, field, large: round(median('candidate', field), 1), small: round(median('baseline', field), 1), ratio: r };
    });
    const results = {
      measuredAt: new Date().toISOString(),
      chromium: version,
      pairs: opts.pairs,
      tasks: opts.tasks,
      baselineTasks: opts.baselineTasks,
      rows: rows.map(({ field, large: l, small: s, ratio: r }) => ({ field, large: l, small: s, ratio: r })),
    };
    const markdown = [
      `# The operator's page: a ${opts.tasks.toLocaleString('en')}-task graph against a ${opts.baselineTasks}-task one`,
      '',
      `Measured by \`npx tsx bench/operatorPage.ts\` on ${results.measuredAt.slice(0, 10)}: Chromium ${version} (headless, driven by`,
      `playwright-core), ${opts.pairs} interleaved pairs after a warm-up, each load in a fresh browser context, the page served`,
      'by the agent API on loopback from a real Postgres 15. Medians; the ratio is large / small per pair (median, IQR).',
      '',
      `| per load | ${opts.tasks.toLocaleString('en')} tasks | ${opts.baselineTasks} tasks | ratio (IQR) |`,
      '|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.label} | ${r.large} | ${r.small} | ${
            // A baseline of 0 (no main-thread task over 50 ms) has no ratio.
            r.small === 0 ? '—' : `${round(r.ratio.median, 2)} (${round(r.ratio.p25, 2)}-${round(r.ratio.p75, 2)})`
          } |`,
      ),
      '',
      "The DAG is laid out by ELK's layered algorithm (elkjs) in a Web Worker, ended once it answers, so the table",
      'is usable while the DAG is drawn; the longest main-thread task (over 50 ms) is how long the page could not',
      "answer a key or a click during the load. The heap is the page's, after the worker has ended.",
      '',
    ].join('\n');
    await mkdir(opts.out, { recursive: true });
    await writeFile(path.join(opts.out, 'operator-page.json'), `${JSON.stringify(results, null, 2)}\n`);
    await writeFile(path.join(opts.out, 'operator-page.md'), markdown);
    process.stdout.write(markdown);
  } finally {
    await browser.close();
    await server.close();
    await api.close();
  }
});
