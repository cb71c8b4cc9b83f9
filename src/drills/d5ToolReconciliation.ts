import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Queryable } from '../db/queryable.js';
import { eventRead, toolCallRead } from '../db/sql/reads.js';
import { silentLog } from '../log.js';
import { taskIdOf } from '../tasks/taskId.js';
import { claimFence, reclaim } from '../testkit/claims.js';
import { independentTasks, insertGraph } from '../testkit/graphs.js';
import type { ToolFault } from '../testkit/toolServer.js';
import { countDuplicateEffects, spawnToolServer } from '../testkit/toolServerProcess.js';
import { createHttpTool } from '../tools/httpTool.js';
import { createToolGateway, toolCallKey, type CallTool } from '../tools/toolGateway.js';
import { TOOL_CALL_DONE, type ToolAdapter } from '../tools/types.js';
import { runToolKillTrials } from './d5WorkerKills.js';
import { D5_AMBIGUOUS_CALLS_DEFAULT, drillResult, type DrillOutput, type DrillResult } from './types.js';

/** Builds the gateway under test around the drill's tool; the drill's broken variants replace it. */
export type GatewayFactory = (db: Queryable, tools: Record<string, ToolAdapter>) => CallTool;

const batonGateway: GatewayFactory = (db, tools) => createToolGateway({ db, tools }).call;

/** Calls in flight at once. */
const CONCURRENCY = 16;
/** The drill tool's answer deadline: a hang past it reads as a timeout. */
const CALL_TIMEOUT_MS = 1_000;
/** A dead owner never records; its in-flight call just waits until the drill lets it go. */
const DEAD_OWNER_TIMEOUT_MS = 60_000;
/** How long a held call may take to reach the tool. */
const HELD_TIMEOUT_MS = 30_000;
const TOOL = 'drill-effects';
const STEP = 'effect';

/**
 * How each ambiguous call goes wrong. The last two leave owner A's call in flight (sent, no
 * answer, as if A died between send and record) while the task is reclaimed by owner B.
 */
const SCENARIOS: ReadonlyArray<{ name: string; faults: ToolFault[]; inFlightAtReclaim?: boolean }> = [
  { name: 'reset after commit', faults: ['drop_after_commit'] },
  { name: 'timeout before commit', faults: ['timeout_before_commit'] },
  { name: '5xx after commit', faults: ['error_after_commit'] },
  { name: '5xx before commit', faults: ['error_before_commit'] },
  { name: 'owner lost after the tool committed', faults: ['hold_after_commit'], inFlightAtReclaim: true },
  { name: 'owner lost before the tool committed', faults: ['hold_before_commit'], inFlightAtReclaim: true },
];

interface ToolReconciliationDrillOptions extends DrillOutput {
  pool: pg.Pool;
  /** Calls made in this process, each meeting one fault that leaves its outcome uncertain. (Default: 500) */
  ambiguousCalls?: number;
  /** The gateway under test. (Default: baton's) */
  gateway?: GatewayFactory;
  /** Real `baton worker` processes SIGKILLed between send and record; needs `temporal` and `workerEnv`. (Default: 0) */
  kills?: number;
  temporal?: Client;
  /** DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE for the worker processes. */
  workerEnv?: Record<string, string>;
  /** Heartbeat timeout of the kill trials' tasks. (Default: 2s) */
  heartbeatTimeoutMs?: number;
}

/**
 * D5: ambiguous external calls against a real HTTP tool (its own process, which does not dedupe by
 * key), then worker processes killed while their call's answer is held. Passes when the tool shows
 * no duplicate effect and every ambiguous call ends in a known outcome that matches the tool.
 */
export async function runToolReconciliationDrill(options: ToolReconciliationDrillOptions): Promise<DrillResult> {
  const log = options.log ?? silentLog;
  const progress = options.progress ?? log;
  const total = options.ambiguousCalls ?? D5_AMBIGUOUS_CALLS_DEFAULT;
  const server = await spawnToolServer({ hangMs: 10 * CALL_TIMEOUT_MS });
  const violations: string[] = [];
  try {
    const tool = (timeoutMs: number) =>
      createHttpTool({ url: `${server.url}/effects`, lookupUrl: `${server.url}/effects/{key}`, timeoutMs });
    const call = (options.gateway ?? batonGateway)(options.pool, { [TOOL]: tool(CALL_TIMEOUT_MS) });
    const deadOwner = createToolGateway({ db: options.pool, tools: { [TOOL]: tool(DEAD_OWNER_TIMEOUT_MS) } }).call;
    const graphId = await insertGraph(options.pool, independentTasks(total), { prefix: 'd5', actor: 'drill' });
    let calls = 0;
    const inherited = new Set<string>();

    const one = async (i: number) => {
      const scenario = SCENARIOS[i % SCENARIOS.length]!;
      const taskId = taskIdOf(graphId, `t${i}`);
      const key = toolCallKey(taskId, STEP);
      const input = { tool: TOOL, step: STEP, params: { call: i, scenario: scenario.name } };
      const ownerA = await claimFence(options.pool, taskId, 'drill-owner-a');
      await server.setFaults(key, scenario.faults);
      calls++;
      if (!scenario.inFlightAtReclaim) {
        await call(ownerA, input).catch(() => undefined);
        // The agent asks again, as after any error: answered from the ledger, nothing is sent.
        calls++;
        await call(ownerA, input).catch(() => undefined);
        return;
      }
      const lost = deadOwner(ownerA, input).catch(() => undefined);
      await server.waitForHeld(key, HELD_TIMEOUT_MS);
      const ownerB = await reclaim(options.pool, ownerA, 'drill-owner-b', { actor: 'drill', reason: 'drill: owner lost mid-call' });
      inherited.add(key);
      calls++;
      await call(ownerB, input).catch(() => undefined);
      await server.release(key);
      await lost;
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, total) }, async () => {
        while (next < total) await one(next++);
      }),
    );
    log(`D5: ${total} ambiguous calls made; checking the tool's effects against the ledger ...`);

    const effects = await server.effects();
    const effectsByKey = new Map<string, typeof effects>();
    for (const e of effects) effectsByKey.set(e.key, [...(effectsByKey.get(e.key) ?? []), e]);
    const rows = new Map((await toolCallRead(options.pool, graphId)).map((r) => [r.key, r]));
    const events = await eventRead(options.pool, 'graph', graphId, { includeGraphTasks: true });
    const uncertain = new Set(events.filter((e) => e.kind === 'tool_call_uncertain').map((e) => String(e.details.key)));
    let ambiguous = 0;
    let reconciled = 0;
    for (let i = 0; i < total; i++) {
      const key = toolCallKey(taskIdOf(graphId, `t${i}`), STEP);
      if (!uncertain.has(key) && !inherited.has(key)) continue;
      ambiguous++;
      const row = rows.get(key);
      const fx = effectsByKey.get(key) ?? [];
      const known = row && TOOL_CALL_DONE.has(row.status) && fx.length === 1 && (row.result as { id?: string } | null)?.id === fx[0]!.id;
      if (known) reconciled++;
      else
        violations.push(
          `${key}: ledger says ${row?.status ?? 'nothing'} (${JSON.stringify(row?.result ?? null)}), the tool shows ${fx.length} effect(s)`,
        );
    }
    for (const [key, fx] of effectsByKey) if (fx.length > 1) violations.push(`${key}: ${fx.length} effects for one call`);

    let kills = { trials: 0, reconciled: 0, duplicates: 0 };
    if (options.kills) {
      if (!options.temporal || !options.workerEnv) throw new Error('D5 kill trials need temporal and workerEnv');
      kills = await runToolKillTrials({
        ...options,
        temporal: options.temporal,
        workerEnv: options.workerEnv,
        server,
        trials: options.kills,
        violations,
        progress,
      });
    }
    return drillResult(
      'D5',
      'retry a tool call after an uncertain outcome',
      {
        calls: calls + kills.trials * 2,
        ambiguous: ambiguous + kills.trials,
        reconciled: reconciled + kills.reconciled,
        duplicateEffects: countDuplicateEffects(effects) + kills.duplicates,
        workerKills: kills.trials,
      },
      violations,
    );
  } finally {
    await server.stop();
  }
}
