// What agent isolation costs per agent start (docs/isolation.md): the real command runner runs a
// trivial agent (print a line, commit one file) unisolated (a worktree, the worker's user) and
// isolated (a per-run uid in a private clone; then also in bubblewrap with no network, and in
// bubblewrap on the outside network through slirp4netns, the default of a root worker),
// interleaved in one process, and reports candidate / baseline ratios (../shared/BENCH.md).
// Needs root (per-run users). Usage: npx tsx bench/isolation.ts [--pairs 9] [--files 1,5000] [--out dir]
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parsePositiveInt } from '../src/cli/options.js';
import { stderrLog } from '../src/log.js';
import { resolveAgentIsolation, type AgentIsolation } from '../src/runners/isolation/agentIsolation.js';
import { createCommandRunner } from '../src/runners/commandRunner.js';
import type { Claim } from '../src/tasks/types.js';
import { taskIdOf } from '../src/tasks/taskId.js';
import { commitFiles, formatSpread, gitBenchEnvironment } from './gitRepos.js';
import { interleave } from './interleave.js';
import { nowMs, round, spread, type Spread } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const AGENT =
  'echo started; echo x > bench.txt && git add bench.txt && git -c user.name=bench -c user.email=bench@localhost commit -qm bench';

const opts = new Command()
  .name('npx tsx bench/isolation.ts')
  .option('--pairs <n>', 'measured pairs per series after the warm-up', parsePositiveInt, 9)
  .option('--files <sizes>', 'repository sizes (files in the checkout), comma-separated', '1,5000')
  .option('--out <dir>', 'where isolation.json and isolation.md go', RESULTS_DIR)
  .parse()
  .opts<{ pairs: number; files: string; out: string }>();
const log = stderrLog;

interface Start {
  /** From `run()` to the agent's first line: checkout, hand-over, uid lease, sandbox, process start. */
  startMs: number;
  /** From `run()` to the artifact: the above, the agent, taking its commit, cleaning up. */
  totalMs: number;
}

/** A repository with `files` small files in 100-file folders, one commit. */
async function repoOf(files: number): Promise<string> {
  const repo = await mkdtemp(path.join(tmpdir(), 'baton-bench-iso-'));
  await commitFiles(repo, files);
  return repo;
}

function runnerFor(isolation: AgentIsolation | undefined, workDir: string, repo: string) {
  const runner = createCommandRunner({ workDir, isolation, heartbeatIntervalMs: 60_000 });
  let n = 0;
  return async (): Promise<Start> => {
    const graphId = `bench-${process.pid}-${isolation ? `${isolation.sandbox}-${isolation.network}` : 'plain'}`;
    const claim = {
      taskId: taskIdOf(graphId, `t${n}`),
      graphId,
      key: `t${n}`,
      claimVersion: 1,
      spec: { run: { command: AGENT }, verify: { command: 'true' } },
      upstreamRevisions: {},
    } as unknown as Claim;
    n++;
    const t0 = nowMs();
    let startMs = NaN;
    await runner.run({
      claim,
      repo,
      base: 'main',
      signal: new AbortController().signal,
      heartbeat: async () => {},
      log: (line) => {
        if (line === 'started' && Number.isNaN(startMs)) startMs = nowMs() - t0;
      },
    });
    return { startMs, totalMs: nowMs() - t0 };
  };
}

interface Series {
  files: number;
  candidate: string;
  startRatio: Spread;
  totalRatio: Spread;
  startMs: { candidate: Spread; baseline: Spread };
  totalMs: { candidate: Spread; baseline: Spread };
}

async function series(files: number, name: string, isolation: AgentIsolation, repo: string, workDir: string): Promise<Series> {
  const candidate = runnerFor(isolation, path.join(workDir, 'candidate'), repo);
  const baseline = runnerFor(undefined, path.join(workDir, 'baseline'), repo);
  const pairs = await interleave(
    `${files} files, ${name}`,
    opts.pairs,
    { candidate, baseline },
    log,
    (p) =>
      `start ${round(p.candidate.startMs, 1)} / ${round(p.baseline.startMs, 1)} ms, total ${round(p.candidate.totalMs, 1)} / ${round(p.baseline.totalMs, 1)} ms`,
  );
  const of = (pick: (s: Start) => number) => ({
    candidate: spread(pairs.map((p) => pick(p.candidate))),
    baseline: spread(pairs.map((p) => pick(p.baseline))),
  });
  return {
    files,
    candidate: name,
    startRatio: spread(pairs.map((p) => p.candidate.startMs / p.baseline.startMs)),
    totalRatio: spread(pairs.map((p) => p.candidate.totalMs / p.baseline.totalMs)),
    startMs: of((s) => s.startMs),
    totalMs: of((s) => s.totalMs),
  };
}

async function environment(isolation: AgentIsolation[]) {
  return { ...(await gitBenchEnvironment()), isolation };
}

function markdown(results: Series[], env: Awaited<ReturnType<typeof environment>>): string {
  const rows = results.map(
    (r) =>
      `| ${r.files} | ${r.candidate} | ${formatSpread(r.startRatio)} | ${formatSpread(r.totalRatio)} | ${r.startMs.candidate.median.toFixed(0)} / ${r.startMs.baseline.median.toFixed(0)} | ` +
      `${r.totalMs.candidate.median.toFixed(0)} / ${r.totalMs.baseline.median.toFixed(0)} | ${r.startRatio.n} |`,
  );
  return [
    '# Agent isolation: cost per agent start',
    '',
    `Generated by \`npx tsx bench/isolation.ts\` at ${env.recordedAt}. Candidate / baseline (unisolated: a worktree, the worker's user), ` +
      `measured in the same process, interleaved (warm-up discarded, order alternating); "median (min–max, IQR)". ` +
      "**start**: from `run()` to the agent's first output line; **total**: to the artifact (agent done, commit taken, checkout removed).",
    '',
    '| files in checkout | candidate | start ratio | total ratio | start ms (cand. / base) | total ms (cand. / base) | n |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Environment: ${env.nproc} cores (${env.cpuModel}), load ${env.loadAverageAtStart.join(' ')}, Linux ${env.kernel}, Node ${env.node}, ${env.git}, ${env.bubblewrap}.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.geteuid?.() !== 0) throw new Error('bench/isolation.ts needs root: per-run agent users are what it measures');
  const perRun = await resolveAgentIsolation({ sandbox: 'none' });
  const sandboxed = await resolveAgentIsolation({ network: 'none' }).catch((error: Error) => {
    log(`bubblewrap unavailable, skipping its series: ${error.message}`);
    return undefined;
  });
  const outside = await resolveAgentIsolation({ network: 'outside' }).catch((error: Error) => {
    log(`the outside network is unavailable, skipping its series: ${error.message}`);
    return undefined;
  });
  const results: Series[] = [];
  for (const files of opts.files.split(',').map((f) => parsePositiveInt(f.trim()))) {
    const repo = await repoOf(files);
    const workDir = await mkdtemp(path.join(tmpdir(), 'baton-bench-iso-work-'));
    try {
      results.push(await series(files, 'per-run uid, private clone', perRun, repo, workDir));
      if (sandboxed) results.push(await series(files, 'per-run uid, clone, bubblewrap, no network', sandboxed, repo, workDir));
      if (outside) results.push(await series(files, 'per-run uid, clone, bubblewrap, outside network (default)', outside, repo, workDir));
    } finally {
      await rm(repo, { recursive: true, force: true });
      await rm(workDir, { recursive: true, force: true });
    }
  }
  const env = await environment([perRun, ...(sandboxed ? [sandboxed] : []), ...(outside ? [outside] : [])]);
  await mkdir(opts.out, { recursive: true });
  await writeFile(path.join(opts.out, 'isolation.json'), `${JSON.stringify({ environment: env, pairs: opts.pairs, results }, null, 2)}\n`);
  const md = markdown(results, env);
  await writeFile(path.join(opts.out, 'isolation.md'), md);
  process.stdout.write(md);
}

await main();
