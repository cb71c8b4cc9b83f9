import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createBatonClient } from '../client.js';
import { selectEvents } from '../db/sql/selectEvents.js';
import { selectTask } from '../db/sql/selectTasks.js';
import { selectToolCalls } from '../db/sql/selectToolCalls.js';
import type { Log } from '../log.js';
import { HTTP_TOOLS_ENV } from '../tools/httpToolsConfig.js';
import { toolCallKey } from '../tools/toolGateway.js';
import { DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT } from './d2WorkerKill.js';
import { commitAll, createScriptedRepo } from './scriptedRepo.js';
import type { ToolServerControl } from './toolServerProcess.js';
import { spawnWorkerProcess, type WorkerProcess } from './workerProcess.js';
import { writeWorkflowBundle } from '../dev/workflowBundle.js';

const TOOL = 'drill-effects';
const STEP = 'open-pr';
/** The workers' answer deadline: longer than a trial, so only the kill ends the held call. */
const WORKER_TOOL_TIMEOUT_MS = 120_000;

export interface ToolKillTrialsOptions {
  pool: pg.Pool;
  temporal: Client;
  workerEnv: Record<string, string>;
  server: ToolServerControl;
  trials: number;
  /** (Default: 2s) */
  heartbeatTimeoutMs?: number;
  /** Violations are appended here. */
  violations: string[];
  log: Log;
}

/**
 * D5's process half: real `baton worker` processes run a command agent that makes one call with
 * `baton tool call`. The tool commits and holds its answer; the worker that made the call is
 * SIGKILLed between send and record. Temporal's heartbeat timeout hands the task to another
 * worker, whose agent makes the same call: the gateway must find the dead owner's `sent` row,
 * reconcile it through lookup and return the effect it finds, sending nothing.
 */
export async function runToolKillTrials(options: ToolKillTrialsOptions): Promise<{ trials: number; reconciled: number; duplicates: number }> {
  const { log, server, violations } = options;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  const trialDeadlineMs = heartbeatTimeoutMs * 3 + 60_000;
  const taskQueue = `baton-d5-${randomUUID().slice(0, 8)}`;
  const client = createBatonClient({ db: options.pool, temporal: options.temporal, taskQueue });
  const repo = await createScriptedRepo();
  const workDir = path.join(tmpdir(), `baton-d5-work-${randomUUID().slice(0, 8)}`);
  const bundlePath = path.join(tmpdir(), `baton-d5-bundle-${randomUUID().slice(0, 8)}.js`);
  await writeWorkflowBundle(bundlePath);
  const env = {
    ...options.workerEnv,
    [HTTP_TOOLS_ENV]: JSON.stringify({
      [TOOL]: { url: `${server.url}/effects`, lookupUrl: `${server.url}/effects/{key}`, timeoutMs: WORKER_TOOL_TIMEOUT_MS },
    }),
  };
  let spawned = 0;
  const spawnOne = () => spawnWorkerProcess({ identity: `d5-worker-${++spawned}`, taskQueue, env, workflowBundle: bundlePath, workDir });
  const workers: WorkerProcess[] = [spawnOne(), spawnOne()];
  let reconciled = 0;
  let duplicates = 0;
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      const deadline = Date.now() + trialDeadlineMs;
      const graphId = `d5k-${randomUUID().slice(0, 8)}`;
      const taskId = `${graphId}/pr`;
      const key = toolCallKey(taskId, STEP);
      try {
        await server.setFaults(key, ['hold_after_commit']);
        await client.submitGraph(
          {
            id: graphId,
            repo,
            policy: { heartbeatTimeoutMs, maxAttempts: 3 },
            tasks: [
              {
                key: 'pr',
                run: { command: `baton tool call ${TOOL} ${STEP} --params '{"trial":${trial}}' > effect.json && ${commitAll('record the effect')}` },
                verify: { command: 'test -s effect.json' },
              },
            ],
          },
          'drill',
        );
        await until(`the call of ${key} to be held at the tool`, deadline, async () => (await server.held()).includes(key));
        const task = await selectTask(options.pool, taskId);
        const [sent] = await selectToolCalls(options.pool, taskId);
        if (sent?.status !== 'sent') violations.push(`${key}: expected the ledger row sent while the answer is held, found ${sent?.status}`);
        const victim = workers.find((w) => w.identity === task.owner);
        if (!victim) throw new Error(`task claimed by unknown owner ${task.owner}`);
        victim.child.kill('SIGKILL');
        await victim.exited;
        workers.splice(workers.indexOf(victim), 1, spawnOne());
        log(`D5 kill ${trial + 1}/${options.trials}: SIGKILLed ${victim.identity} between send and record of ${key}`);

        let timer: NodeJS.Timeout | undefined;
        const outcome = await Promise.race([
          client.waitForGraph(graphId),
          new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, deadline - Date.now())))),
        ]).finally(() => clearTimeout(timer));
        const [row] = await selectToolCalls(options.pool, taskId);
        const effects = (await server.effects()).filter((e) => e.key === key);
        duplicates += Math.max(0, effects.length - 1);
        const events = await selectEvents(options.pool, 'task', taskId);
        const reconcile = events.find((e) => e.kind === 'tool_call_reconciled' && e.details.previous_owner === victim.identity);
        if (!outcome || !outcome.verified.includes(taskId)) violations.push(`${key}: the task was not verified after the kill`);
        else if (effects.length !== 1) violations.push(`${key}: ${effects.length} effects after the kill`);
        else if (row?.status !== 'reconciled_succeeded' || row.owner === victim.identity || !reconcile) {
          violations.push(`${key}: not reconciled by the next owner (ledger ${row?.status} by ${row?.owner})`);
        } else reconciled++;
      } catch (error) {
        violations.push(`${key}: ${(error as Error).message}`);
      }
    }
  } finally {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await rm(repo, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
    await rm(bundlePath, { force: true });
  }
  return { trials: options.trials, reconciled, duplicates };
}

async function until(what: string, deadline: number, check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

