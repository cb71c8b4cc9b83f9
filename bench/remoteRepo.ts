// What a graph's repository as a remote costs per task (issue 22): the git work of one task, run
// and verified, through a remote (worker A resolves the base into its mirror, the real command
// runner runs a trivial agent in a worktree of the mirror, A publishes the commit on the remote;
// worker B fetches that commit into its own mirror and makes the verifier's clean checkout of it)
// against the same task on a path both workers share (run in a worktree of the repository, verify
// checkout of it). Interleaved in one process, candidate / baseline ratios (../shared/BENCH.md); the
// remote is reached by file:// and through `git daemon` on loopback.
// Usage: npx tsx bench/remoteRepo.ts [--pairs 9] [--files 1,5000] [--out dir]
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parsePositiveInt } from '../src/cli/options.js';
import { run } from '../src/dev/run.js';
import { stderrLog } from '../src/log.js';
import { openVerifyCheckout } from '../src/runners/agentCheckout.js';
import { createCommandRunner } from '../src/runners/commandRunner.js';
import { git, runBranch } from '../src/runners/git.js';
import { repositoryMirrors } from '../src/runners/repository.js';
import type { Claim } from '../src/tasks/types.js';
import { taskIdOf } from '../src/tasks/taskId.js';
import { startGitDaemon } from '../src/testkit/gitDaemon.js';
import { interleave } from './interleave.js';
import { nowMs, round, spread, type Spread } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const AGENT = 'echo x > bench.txt && git add bench.txt && git -c user.name=bench -c user.email=bench@localhost commit -qm bench';

const opts = new Command()
  .name('npx tsx bench/remoteRepo.ts')
  .option('--pairs <n>', 'measured pairs per series after the warm-up', parsePositiveInt, 9)
  .option('--files <sizes>', 'repository sizes (files in the checkout), comma-separated', '1,5000')
  .option('--out <dir>', 'where remote-repo.json and remote-repo.md go', RESULTS_DIR)
  .parse()
  .opts<{ pairs: number; files: string; out: string }>();
const log = stderrLog;

/** A bare repository of `files` small files in 100-file folders, one commit, at `<dir>/repo.git`. */
async function bareRepoOf(dir: string, files: number): Promise<string> {
  const work = path.join(dir, 'work');
  await git(dir, ['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < files; i++) {
    const folder = path.join(work, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) await mkdir(folder);
    await writeFile(path.join(folder, `f${i}.txt`), `file ${i}\n${'x'.repeat(200)}\n`);
  }
  await git(work, ['add', '.']);
  await git(work, ['commit', '-q', '-m', 'initial']);
  const bare = path.join(dir, 'repo.git');
  await git(dir, ['clone', '-q', '--bare', work, bare]);
  await rm(work, { recursive: true, force: true });
  return bare;
}

/** One task's git work, run on worker A and verified on worker B, through `repo` (a path or a remote). */
function taskThrough(repo: string, workDir: string, name: string) {
  const workers = ['a', 'b'].map((w) => {
    const dir = path.join(workDir, name, w);
    return {
      dir,
      mirrors: repositoryMirrors(path.join(dir, 'mirrors')),
      runner: createCommandRunner({ workDir: dir, heartbeatIntervalMs: 60_000 }),
    };
  });
  const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
  let n = 0;
  return async (): Promise<number> => {
    const graphId = `bench-${process.pid}-${name}`;
    const key = `t${n++}`;
    const claim = {
      taskId: taskIdOf(graphId, key),
      graphId,
      key,
      claimVersion: 1,
      spec: { run: { command: AGENT }, verify: { command: 'true' } },
      upstreamRevisions: {},
    } as unknown as Claim;
    const t0 = nowMs();
    const atA = await a.mirrors.open(repo);
    const base = atA.remote ? await atA.resolve('main') : 'main';
    const { revision } = await a.runner.run({
      claim,
      repo: atA.dir,
      base,
      signal: new AbortController().signal,
      heartbeat: async () => {},
      log: () => {},
    });
    await atA.publish(runBranch(claim), revision);
    const atB = await b.mirrors.open(repo);
    await atB.fetch([revision]);
    const checkout = await openVerifyCheckout({ workDir: b.dir, repo: atB.dir, taskId: claim.taskId, revision });
    await checkout.close();
    return nowMs() - t0;
  };
}

interface Series {
  files: number;
  candidate: string;
  ratio: Spread;
  ms: { candidate: Spread; baseline: Spread };
}

async function environment() {
  return {
    recordedAt: new Date().toISOString(),
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    loadAverageAtStart: loadavg().map((l) => round(l, 2)),
    kernel: release(),
    node: process.version,
    git: (await run('git', ['--version'])).stdout.trim(),
  };
}

const fmt = (s: Spread, digits = 2) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)}, IQR ${s.p25.toFixed(digits)}–${s.p75.toFixed(digits)})`;

function markdown(results: Series[], env: Awaited<ReturnType<typeof environment>>): string {
  return [
    "# A graph's repository as a remote: cost per task",
    '',
    `Generated by \`npx tsx bench/remoteRepo.ts\` at ${env.recordedAt}. The git work of one task (base resolved, agent run in a worktree, ` +
      'its commit taken; then a clean verify checkout of it, made by another worker) through a remote, against the same on a path ' +
      'both workers share. Through a remote, worker A fetches the base into its mirror and publishes the commit; worker B fetches it into its own. ' +
      'Measured in the same process, interleaved (warm-up discarded, order alternating); "median (min–max, IQR)".',
    '',
    '| files in checkout | candidate | ratio to the shared path | ms (cand. / base) | n |',
    '|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.files} | ${r.candidate} | ${fmt(r.ratio)} | ${r.ms.candidate.median.toFixed(0)} / ${r.ms.baseline.median.toFixed(0)} | ${r.ratio.n} |`,
    ),
    '',
    `Environment: ${env.nproc} cores (${env.cpuModel}), load ${env.loadAverageAtStart.join(' ')}, Linux ${env.kernel}, Node ${env.node}, ${env.git}.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const results: Series[] = [];
  for (const files of opts.files.split(',').map((f) => parsePositiveInt(f.trim()))) {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-bench-remote-'));
    const bare = await bareRepoOf(dir, files);
    const daemon = await startGitDaemon(dir, 'repo.git');
    try {
      const baseline = taskThrough(bare, dir, 'path');
      for (const [name, url] of [
        ['file:// remote', `file://${bare}`],
        ['git daemon on loopback', daemon.url('repo.git')],
      ] as const) {
        const candidate = taskThrough(url, dir, name.replace(/\W+/g, '-'));
        const pairs = await interleave(
          `${files} files, ${name}`,
          opts.pairs,
          { candidate, baseline },
          log,
          (p) => `${round(p.candidate, 1)} / ${round(p.baseline, 1)} ms`,
        );
        results.push({
          files,
          candidate: name,
          ratio: spread(pairs.map((p) => p.candidate / p.baseline)),
          ms: { candidate: spread(pairs.map((p) => p.candidate)), baseline: spread(pairs.map((p) => p.baseline)) },
        });
      }
    } finally {
      await daemon.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const env = await environment();
  await mkdir(opts.out, { recursive: true });
  await writeFile(
    path.join(opts.out, 'remote-repo.json'),
    `${JSON.stringify({ environment: env, pairs: opts.pairs, results }, null, 2)}\n`,
  );
  const md = markdown(results, env);
  await writeFile(path.join(opts.out, 'remote-repo.md'), md);
  process.stdout.write(md);
}

await main();
