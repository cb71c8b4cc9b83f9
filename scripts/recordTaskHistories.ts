// Records the histories of the task lifecycle's less travelled paths for the replay tests:
// `npx tsx scripts/recordTaskHistories.ts <label>` writes test/fixtures/taskWorkflows.<label>.histories.json.
// It runs, with function agents on in-process workers (on the embedded stack, or DATABASE_URL /
// TEMPORAL_ADDRESS): an upstream task rerun while its dependent runs (its verification then stale,
// the dependent's workflow re-runs it); an upstream rerun that releases a dependent whose workflow
// waits on it (the rerun's workflow starts that workflow by name, finds it running and signals it);
// a rejected verification; a task that uses its attempts; a cancelled graph; a pooled task whose
// remote agent goes silent (the run is recovered after Temporal's heartbeat timeout and offered
// again, and the agent takes it again and submits); and a run handed back by a worker that shuts
// down (the next worker runs it at once). Record again after a change to what the workflows
// schedule, start or signal, and keep the old file while executions recorded with it may run.
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createAgentApi } from '../src/api/agentApi.js';
import { agentTokenCreate } from '../src/api/tokens.js';
import { openStack } from '../src/cli/stack.js';
import { createBatonClient } from '../src/client.js';
import { waitFor } from '../src/dev/waitFor.js';
import { stderrLog } from '../src/log.js';
import type { Artifact } from '../src/tasks/types.js';
import { connectClient, connectWorker } from '../src/temporal/connection.js';
import { createBatonWorker } from '../src/worker.js';

const label = process.argv[2];
if (!label || !/^[a-z0-9-]+$/.test(label))
  throw new Error('usage: tsx scripts/recordTaskHistories.ts <label: lowercase letters, digits, dashes>');
const target = new URL(`../test/fixtures/taskWorkflows.${label}.histories.json`, import.meta.url);
/** How long one scenario may take on a loaded machine before the recording gives up. */
const SCENARIO_TIMEOUT_MS = 120_000;

Runtime.install({ logger: new DefaultLogger('WARN') });
const open = await openStack(stderrLog, {}, 'admin');
const connection = await connectClient(open.stack.temporal);
const nativeConnection = await connectWorker(open.stack.temporal);
try {
  const temporal = new Client({ connection, namespace: open.stack.temporal.namespace });
  const taskQueue = `record-${randomUUID().slice(0, 8)}`;
  const gates = new Map<string, Promise<void>>();
  const verified = new Set<string>();
  const artifact = (revision: string): Artifact => ({ revision, testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'x' } });
  const startWorker = () =>
    createBatonWorker({
      connection: nativeConnection,
      namespace: open.stack.temporal.namespace,
      taskQueue,
      db: open.pool,
      identity: 'recorder',
      agentIsolation: { sandbox: 'none', user: 'worker', network: 'host' },
      log: () => {},
      agentFunctions: {
        commit: async (ctx) => artifact(`rev-${ctx.claim.key}-${ctx.claim.claimVersion}`),
        // The first run of a task with a gate heartbeats until the gate opens or the run is cancelled.
        gated: async (ctx) => {
          const gate = ctx.claim.claimVersion === 1 ? gates.get(ctx.claim.taskId) : undefined;
          let open = !gate;
          void gate?.then(() => (open = true));
          while (!open && !ctx.signal.aborted) {
            await ctx.heartbeat({ step: 'waiting for the recorder' });
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
          // Stopped before the gate opened (cancelled, or the worker shuts down): no artifact.
          if (!open) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('stopped before the recorder let it finish');
          return artifact(`rev-${ctx.claim.key}-${ctx.claim.claimVersion}`);
        },
        fails: async () => {
          throw new Error('the agent fell over');
        },
      },
      verifierFunctions: {
        pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' }),
        failOnce: async (ctx) => {
          const first = !verified.has(ctx.taskId);
          verified.add(ctx.taskId);
          return { exitCode: first ? 1 : 0, outputDigest: 'sha256:x', outputTail: first ? 'boom' : 'ok' };
        },
      },
    });
  const worker = await startWorker();
  const client = createBatonClient({ db: open.pool, temporal, taskQueue });
  const status = (taskId: string, wanted: string, also: (revision: string | null) => boolean = () => true) =>
    waitFor(
      `${taskId} to be ${wanted}`,
      async () => {
        const task = await client.task(taskId);
        if (task.status !== wanted || !also(task.verifiedRevision)) throw new Error(`${taskId} is ${task.status}`);
      },
      { timeoutMs: SCENARIO_TIMEOUT_MS, intervalMs: 200 },
    );
  const run = `rec-${randomUUID().slice(0, 6)}`;
  const scenarios: Record<string, string> = {};
  const blocked = `${run}-blocked`;
  scenarios[blocked] = 'an upstream rerun that releases a dependent whose workflow waits on it (signal)';
  await worker.runUntil(
    (async () => {
      // An upstream task rerun while its dependent runs: the dependent's verification is then stale,
      // and its workflow re-runs it.
      const wake = `${run}-wake`;
      scenarios[wake] = 'an upstream task rerun while its dependent runs (stale, re-run)';
      let openGate = () => {};
      gates.set(`${wake}/down`, new Promise<void>((resolve) => (openGate = resolve)));
      await client.submitGraph(
        {
          id: wake,
          policy: { heartbeatTimeoutMs: 5_000 },
          tasks: [
            { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
            { key: 'down', run: { function: 'gated' }, verify: { function: 'pass' }, dependsOn: ['up'] },
          ],
        },
        'recorder',
      );
      await status(`${wake}/down`, 'running');
      await client.rerunTask(`${wake}/up`, 'recorder', 'a new revision upstream');
      await status(`${wake}/up`, 'verified', (revision) => revision === 'rev-up-2');
      openGate();
      const woken = await client.waitForGraph(wake);
      if (!woken.verified.includes(`${wake}/down`)) throw new Error(`the dependent was not verified: ${JSON.stringify(woken)}`);

      // A dependent whose workflow waits on its blocked task when the upstream task's rerun verifies:
      // the rerun's workflow finds that workflow running and signals it. Set up below, with no worker.
      await client.submitGraph(
        {
          id: blocked,
          tasks: [
            { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
            { key: 'down', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['up'] },
          ],
        },
        'recorder',
      );
      const first = await client.waitForGraph(blocked);
      if (first.verified.length !== 2) throw new Error(`the graph was not verified: ${JSON.stringify(first)}`);

      const rejected = `${run}-rejected`;
      scenarios[rejected] = 'a verification rejected once, then the task run and verified again';
      await client.submitGraph(
        { id: rejected, tasks: [{ key: 'work', run: { function: 'commit' }, verify: { function: 'failOnce' } }] },
        'recorder',
      );
      const second = await client.waitForGraph(rejected);
      if (second.verified.length !== 1) throw new Error(`the rejected task was not verified on its second run: ${JSON.stringify(second)}`);

      const exhausted = `${run}-exhausted`;
      scenarios[exhausted] = 'a task whose runs fail until it has used its attempts';
      await client.submitGraph(
        { id: exhausted, policy: { maxAttempts: 2 }, tasks: [{ key: 'work', run: { function: 'fails' }, verify: { function: 'pass' } }] },
        'recorder',
      );
      const failed = await client.waitForGraph(exhausted);
      if (failed.failed.length !== 1) throw new Error(`the failing task did not fail: ${JSON.stringify(failed)}`);

      const cancelled = `${run}-cancelled`;
      scenarios[cancelled] = 'a graph cancelled while its task runs';
      gates.set(`${cancelled}/work`, new Promise<void>(() => {}));
      await client.submitGraph(
        { id: cancelled, tasks: [{ key: 'work', run: { function: 'gated' }, verify: { function: 'pass' } }] },
        'recorder',
      );
      await status(`${cancelled}/work`, 'running');
      await client.cancelGraph(cancelled, 'recorder', 'recording a cancellation');
      await client.waitForGraph(cancelled).catch(() => undefined);

      // A pooled task: the recorder is its remote agent, through the agent API. It takes the run,
      // beats once and goes silent; the run goes silent with it, Temporal's heartbeat timeout ends the
      // attempt, the next attempt recovers the claim and offers the task again; the agent takes it again and submits.
      const pooled = `${run}-pooled`;
      scenarios[pooled] =
        'a pooled run whose remote agent goes silent: recovered after the heartbeat timeout, then taken again and submitted';
      const api = createAgentApi({ db: open.pool, log: () => {} });
      const { secret } = await agentTokenCreate(open.pool, {
        identity: 'remote-recorder',
        scopes: ['read', 'submit'],
        createdBy: 'recorder',
      });
      await client.submitGraph(
        {
          id: pooled,
          policy: { heartbeatTimeoutMs: 2_000, maxAttempts: 3 },
          tasks: [{ key: 'work', run: { pool: 'recorders' }, verify: { function: 'pass' } }],
        },
        'recorder',
      );
      const take = async () => {
        for (;;) {
          const taken = (await api.perform(secret, 'pool.claim', { pool: 'recorders', waitSeconds: 5 })) as {
            runToken: string;
            claimVersion: number;
          } | null;
          if (taken) return taken;
        }
      };
      const silent = await take();
      await api.perform(silent.runToken, 'heartbeat', { progress: { step: 'about to go silent' } });
      const again = await take();
      await api.perform(again.runToken, 'submit', { revision: 'a'.repeat(40) });
      await status(`${pooled}/work`, 'verified');
      await api.close();

      // A run still going when its worker shuts down: handed back, and run by the next worker (below).
      const drained = `${run}-drained`;
      scenarios[drained] = 'a run handed back by a worker shutting down, then run by the next worker';
      gates.set(`${drained}/work`, new Promise<void>(() => {}));
      await client.submitGraph(
        { id: drained, tasks: [{ key: 'work', run: { function: 'gated' }, verify: { function: 'pass' } }] },
        'recorder',
      );
      await status(`${drained}/work`, 'running');
    })(),
  );
  // No worker runs: the dependent's rerun workflow cannot claim before the upstream rerun blocks it.
  await client.rerunTask(`${blocked}/down`, 'recorder', 'run it again');
  await client.rerunTask(`${blocked}/up`, 'recorder', 'a new revision upstream');
  await (
    await startWorker()
  ).runUntil(
    (async () => {
      await status(`${blocked}/down`, 'verified', (revision) => revision === 'rev-down-2');
      await status(`${run}-drained/work`, 'verified');
      // Every execution of the queue, each run of a workflow id too, once the last has closed.
      await waitFor(
        'every recorded workflow to close',
        async () => {
          const { count } = await temporal.workflow.count(`TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`);
          if (count > 0) throw new Error(`${count} workflows still run`);
        },
        { timeoutMs: SCENARIO_TIMEOUT_MS, intervalMs: 500 },
      );
    })(),
  );
  const executions = [];
  for await (const execution of temporal.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) executions.push(execution);
  executions.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const histories = [];
  for (const { workflowId, runId, type, status } of executions) {
    const graphId = Object.keys(scenarios).find((id) => workflowId.includes(`:${id}`))!;
    const history = await temporal.workflow.getHandle(workflowId, runId).fetchHistory();
    const what = `${scenarios[graphId]}: ${type} ${workflowId.slice(workflowId.indexOf(':') + 1)}, ${status.name.toLowerCase()}`;
    histories.push({ workflowId, what, history: JSON.parse(historyToJSON(history)) });
  }
  await writeFile(target, `${JSON.stringify(histories, null, 1)}\n`);
  stderrLog(`Saved ${histories.length} histories to ${target.pathname}`);
} finally {
  await connection.close();
  await nativeConnection.close();
  await open.close();
}
