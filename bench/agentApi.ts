// What the agent API's transports cost per call (issue 12): one `whoami` through the store function
// alone (`baton.agent_call` on the API's own login: the baseline), over HTTP (POST /v1/whoami), and
// over MCP (a connected SDK client over Streamable HTTP), interleaved in one process. Each pair
// is `calls` sequential calls per side; reports ratios and p50 latencies (../shared/BENCH.md).
// Needs DATABASE_URL of a login that may create databases and roles (as the test suite's).
// Usage: npx tsx bench/agentApi.ts [--pairs 9] [--calls 200]
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Command } from 'commander';
import { createAgentApi } from '../src/api/agentApi.js';
import { startAgentServer } from '../src/api/agentServer.js';
import { agentTokenCreate } from '../src/api/tokens.js';
import { parsePositiveInt } from '../src/cli/options.js';
import { stderrLog } from '../src/log.js';
import { interleave } from './interleave.js';
import { withScratchAgentDatabase } from './scratchDatabase.js';
import { nowMs, quantile, round, spread } from './stats.js';

const opts = new Command()
  .name('npx tsx bench/agentApi.ts')
  .option('--pairs <n>', 'measured pairs per series after the warm-up', parsePositiveInt, 9)
  .option('--calls <n>', 'sequential calls per side of a pair', parsePositiveInt, 200)
  .parse()
  .opts<{ pairs: number; calls: number }>();
const log = stderrLog;

await withScratchAgentDatabase('baton_bench_api', async ({ admin, agent: pool }) => {
  const { secret } = await agentTokenCreate(admin, { identity: 'bench-agent', scopes: ['read'], createdBy: 'bench' });
  const server = await startAgentServer(createAgentApi({ db: pool, rateLimit: { perSecond: 1e6, burst: 1e6 } }), {
    port: 0,
    host: '127.0.0.1',
  });
  const mcp = new Client({ name: 'bench', version: '1' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
  );

  const timed = async (call: () => Promise<unknown>) => {
    const samples: number[] = [];
    const start = nowMs();
    for (let i = 0; i < opts.calls; i++) {
      const t = nowMs();
      await call();
      samples.push(nowMs() - t);
    }
    return { totalMs: nowMs() - start, p50: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
  };
  const store = () => timed(() => pool.query('SELECT baton.agent_call($1, $2, $3)', [secret, 'whoami', '{}']));
  const http = () =>
    timed(async () => {
      const response = await fetch(`${server.url}/v1/whoami`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: '{}',
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      await response.json();
    });
  const viaMcp = () =>
    timed(async () => {
      const result = await mcp.callTool({ name: 'whoami', arguments: {} });
      if (result.isError) throw new Error(JSON.stringify(result.content));
    });

  const report: string[] = [
    `| transport | ratio to the store call (median, IQR) | p50 per call, ms (candidate / store) |`,
    '|---|---|---|',
  ];
  for (const [label, candidate] of [
    ['HTTP POST /v1/whoami', http],
    ['MCP tools/call whoami', viaMcp],
  ] as const) {
    const pairs = await interleave(
      label,
      opts.pairs,
      { candidate, baseline: store },
      log,
      (p) => `${round(p.candidate.p50)} / ${round(p.baseline.p50)} ms`,
    );
    const ratios = spread(pairs.map((p) => p.candidate.totalMs / p.baseline.totalMs));
    const p50 = spread(pairs.map((p) => p.candidate.p50));
    const base = spread(pairs.map((p) => p.baseline.p50));
    report.push(
      `| ${label} | ${round(ratios.median, 2)} (${round(ratios.p25, 2)}-${round(ratios.p75, 2)}) | ${round(p50.median, 2)} / ${round(base.median, 2)} |`,
    );
  }
  process.stdout.write(
    `${report.join('\n')}\n(${opts.pairs} pairs of ${opts.calls} sequential calls, one process, loopback; whoami through baton.agent_call each time)\n`,
  );
  await mcp.close();
  await server.close();
});
