// What the git-level benchmarks (isolation.ts, remoteRepo.ts) share: a repository of a given size,
// the machine they ran on, and how a spread is written in their tables.
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release } from 'node:os';
import path from 'node:path';
import { run } from '../src/dev/run.js';
import { git } from '../src/runners/git.js';
import { round, type Spread } from './stats.js';

/** Makes `repo` a repository with `files` small files in 100-file folders, in one commit on main. */
export async function commitFiles(repo: string, files: number): Promise<void> {
  await git(path.dirname(repo), ['init', '-q', '-b', 'main', repo]);
  for (let i = 0; i < files; i++) {
    const dir = path.join(repo, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) await mkdir(dir);
    await writeFile(path.join(dir, `f${i}.txt`), `file ${i}\n${'x'.repeat(200)}\n`);
  }
  await git(repo, ['add', '.']);
  await git(repo, ['commit', '-q', '-m', 'initial']);
}

/** The machine and the tools a git benchmark ran with. */
export async function gitBenchEnvironment() {
  const version = (file: string, args: string[]) =>
    run(file, args).then(
      (r) => r.stdout.trim().split('\n')[0],
      () => 'not installed',
    );
  return {
    recordedAt: new Date().toISOString(),
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    loadAverageAtStart: loadavg().map((l) => round(l, 2)),
    kernel: release(),
    node: process.version,
    git: await version('git', ['--version']),
    bubblewrap: await version('bwrap', ['--version']),
  };
}

/** `median (min–max, IQR p25–p75)`. */
export const formatSpread = (s: Spread, digits = 2) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)}, IQR ${s.p25.toFixed(digits)}–${s.p75.toFixed(digits)})`;
