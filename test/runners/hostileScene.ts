// What the hostile-agent tests share: a scratch folder and a repository other users may read, the
// folders a worker holds (a baton home with a 0600 secret, a folder of its own), and running the
// worker-like harness process (hostileHarness.ts) to get its report.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect } from 'vitest';
import { createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import type { HarnessConfig, HarnessReport } from './hostileHarness.js';

const HARNESS = fileURLToPath(new URL('./hostileHarness.ts', import.meta.url));

export interface HostileScene {
  /** A folder of the test file's, searchable by other users. */
  scratch: string;
  /** A scripted repository other users may read, as a project checkout usually is: what keeps agents from its branches must be write permission. */
  repo: string;
}

/** Creates the file's scratch folder and repository before its tests and removes them after. */
export function useHostileScene(name: string): HostileScene {
  const scene = {} as HostileScene;
  beforeAll(async () => {
    scene.scratch = await mkdtemp(path.join(tmpdir(), `baton-${name}-`));
    await chmod(scene.scratch, 0o755);
    scene.repo = await createScriptedRepo();
    await chmod(scene.repo, 0o755);
  });
  afterAll(async () => {
    await rm(scene.scratch, { recursive: true, force: true });
    await rm(scene.repo, { recursive: true, force: true });
  });
  return scene;
}

/** A fresh baton home (holding `canary-secret`, 0600, the worker's), its work folder, and another folder of the worker's. */
export async function workerFolders(scratch: string, secret: string): Promise<{ home: string; workDir: string; outside: string }> {
  const home = path.join(scratch, `home-${randomUUID().slice(0, 8)}`);
  await mkdir(home, { mode: 0o755 });
  await writeFile(path.join(home, 'canary-secret'), secret, { mode: 0o600 });
  const outside = path.join(scratch, `outside-${randomUUID().slice(0, 8)}`);
  await mkdir(outside, { mode: 0o755 });
  return { home, workDir: path.join(home, 'work'), outside };
}

/** Runs the harness with `config` in a process of its own whose whole environment is `env`; its report and pid. */
export async function runHarness(config: HarnessConfig, env: NodeJS.ProcessEnv): Promise<{ report: HarnessReport; pid: number }> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), HARNESS, JSON.stringify(config)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(code, stderr).toBe(0);
  return { report: JSON.parse(stdout.trim().split('\n').at(-1)!) as HarnessReport, pid: child.pid! };
}
