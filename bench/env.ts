import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { POOL_SIZE_DEFAULT } from '../src/db/pool.js';
import { run } from '../src/dev/run.js';
import { DEV_DYNAMIC_CONFIG } from '../src/dev/temporalDevServer.js';
import { STICKY_QUEUE_TIMEOUT_MS_DEFAULT } from '../src/worker.js';
import type { BenchStack } from './stack.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

async function packageVersion(name: string): Promise<string> {
  const file = path.join(REPO_ROOT, 'node_modules', name, 'package.json');
  return readFile(file, 'utf8').then(
    (t) => (JSON.parse(t) as { version: string }).version,
    () => 'not installed',
  );
}

async function gitCommit(): Promise<{ commit: string; dirty: boolean }> {
  const commit = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT }).then(
    (r) => r.stdout.trim(),
    () => 'unknown',
  );
  const status = await run('git', ['status', '--porcelain', '--', 'src', 'workflows', 'activities'], { cwd: REPO_ROOT }).then(
    (r) => r.stdout.trim(),
    () => '',
  );
  return { commit, dirty: status.length > 0 };
}

/** What the figures depend on: machine, servers and their settings, library versions, worker options. */
export async function recordEnvironment(stack: BenchStack) {
  const { rows: settings } = await stack.pool.query<{ name: string; setting: string; unit: string | null; source: string }>(
    "SELECT name, setting, unit, source FROM pg_settings WHERE source <> 'default' ORDER BY name",
  );
  const { rows: version } = await stack.pool.query<{ version: string }>('SELECT version()');
  const temporalPackages = ['activity', 'client', 'common', 'worker', 'workflow', 'core-bridge', 'proto'];
  const cpuList = cpus();
  return {
    recordedAt: new Date().toISOString(),
    git: await gitCommit(),
    machine: {
      nproc: availableParallelism(),
      cpuModel: cpuList[0]?.model ?? 'unknown',
      memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
      loadAverageAtStart: loadavg().map((l) => Number(l.toFixed(2))),
      platform: `${process.platform} ${process.arch}`,
    },
    node: process.version,
    postgres: {
      version: version[0]!.version,
      embedded: stack.stack.embeddedPostgres,
      nonDefaultSettings: Object.fromEntries(settings.map((s) => [s.name, `${s.setting}${s.unit ? ` ${s.unit}` : ''} (${s.source})`])),
    },
    temporal: {
      cli: stack.stack.temporalCli?.version ?? '(external server)',
      server: stack.stack.temporalServerVersion ?? (await serverVersion(stack)),
      devServerState: stack.stack.temporalCli ? 'in memory (ephemeral)' : 'external',
      /** The dev server's dynamic config (none known for an external server). */
      dynamicConfig: stack.stack.temporalCli ? [...DEV_DYNAMIC_CONFIG] : [],
    },
    packages: Object.fromEntries(
      await Promise.all(temporalPackages.map(async (p) => [`@temporalio/${p}`, await packageVersion(`@temporalio/${p}`)] as const)),
    ),
    pg: await packageVersion('pg'),
    baton: { poolSizeDefault: POOL_SIZE_DEFAULT, stickyQueueTimeoutMsDefault: STICKY_QUEUE_TIMEOUT_MS_DEFAULT },
  };
}

async function serverVersion(stack: BenchStack): Promise<string> {
  const info = await stack.connection.workflowService.getSystemInfo({}).catch(() => undefined);
  return info?.serverVersion ?? 'unknown';
}

export type Environment = Awaited<ReturnType<typeof recordEnvironment>> & { workerOptions?: unknown };
