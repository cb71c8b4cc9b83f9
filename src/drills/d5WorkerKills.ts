import { rm } from 'node:fs/promises';
import { createBatonClient } from '../client.js';
import { eventRead, taskRead, toolCallRead } from '../db/sql/reads.js';
import type { Log } from '../log.js';
import { taskIdOf } from '../tasks/taskId.js';
import { uniqueGraphId } from '../testkit/graphs.js';
import { commitAll, createScriptedRepo } from '../testkit/scriptedRepo.js';
import type { ToolServerControl } from '../testkit/toolServerProcess.js';
import { startWorkerFleet } from '../testkit/workerFleet.js';
import { HTTP_TOOLS_ENV } from '../tools/httpToolsConfig.js';
import { toolCallKey } from '../tools/toolGateway.js';
import type { WorkerKillDrillOptions } from './d2WorkerKill.js';
import { DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT, DRILL_SETUP_DEADLINE_MS } from './types.js';

const TOOL = 'drill-effects';
const STEP = 'open-pr';
/** The workers' answer deadline: longer than a trial, so only the kill ends the held call. */
const WORKER_TOOL_TIMEOUT_MS = 600_000;

interface ToolKillTrialsOptions extends Pick<WorkerKillDrillOptions, 'pool' | 'temporal' | 'workerEnv' | 'trials' | 'heartbeatTimeoutMs'> {
  server: ToolServerControl;
  /** Violations are appended here. */
  violations: string[];
  /** Where each kill is counted. */
  progress: Log;
}

/**
 * D5's process half: real `baton worker` processes run a command agent that makes one call with
 * `baton tool call`. The tool commits and holds its answer; the worker that made the call is
 * SIGKILLed between send and record. Temporal's heartbeat timeout hands the task to another
 * worker, whose agent makes the same call: the gateway must find the dead owner's `sent` row,
 * reconcile it through lookup and return the effect it finds, sending nothing.
 */
export async function runToolKillTrials(
  options: ToolKillTrialsOptions,
): Promise<{ trials: number; reconciled: number; duplicates: number }> {
  const { progress, server, violations } = options;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  // From the kill: the next owner's run after a heartbeat timeout, then a verification; as in D2, a
  // killed worker's open polls can each hold one of those for a heartbeat timeout.
  const recoveryDeadlineMs = heartbeatTimeoutMs * 3 + 120_000;
  const repo = await createScriptedRepo();
  const env = {
    ...options.workerEnv,
    [HTTP_TOOLS_ENV]: JSON.stringify({
      [TOOL]: { url: `${server.url}/effects`, lookupUrl: `${server.url}/effects/{key}`, timeoutMs: WORKER_TOOL_TIMEOUT_MS },
    }),
  };
  const fleet = await startWorkerFleet({ name: 'd5', env, size: 2 });
  const client = createBatonClient({ db: options.pool, temporal: options.temporal, taskQueue: fleet.taskQueue });
  let reconciled = 0;
  let duplicates = 0;
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      const graphId = uniqueGraphId('d5k');
      const taskId = taskIdOf(graphId, 'pr');
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
                run: {
                  command: `baton tool call ${TOOL} ${STEP} --params '{"trial":${trial}}' > effect.json && ${commitAll('record the effect')}`,
                },
                verify: { command: 'test -s effect.json' },
              },
            ],
          },
          'drill',
        );
        await server.waitForHeld(key, DRILL_SETUP_DEADLINE_MS);
        const task = await taskRead(options.pool, taskId);
        const [sent] = await toolCallRead(options.pool, taskId);
        if (sent?.status !== 'sent')
          violations.push(`${key}: expected the ledger row sent while the answer is held, found ${sent?.status}`);
        const victim = fleet.ownerOf(task.owner);
        await fleet.killAndReplace(victim);
        progress(`D5 kill ${trial + 1}/${options.trials}: SIGKILLed ${victim.identity} between send and record of ${key}`);

        const deadline = AbortSignal.timeout(recoveryDeadlineMs);
        const outcome = await client.waitForGraph(graphId, { signal: deadline }).catch((error: unknown) => {
          if (deadline.aborted) return undefined; // not verified in time: a violation, below
          throw error;
        });
        const [row] = await toolCallRead(options.pool, taskId);
        const effects = (await server.effects()).filter((e) => e.key === key);
        duplicates += Math.max(0, effects.length - 1);
        const events = await eventRead(options.pool, 'task', taskId);
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
    await fleet.stop();
    await rm(repo, { recursive: true, force: true });
  }
  return { trials: options.trials, reconciled, duplicates };
}
