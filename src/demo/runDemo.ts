import { Client } from '@temporalio/client';
import { createBatonClient } from '../client.js';
import type { Queryable } from '../db/queryable.js';
import { toolCallRead } from '../db/sql/reads.js';
import type { DevStack } from '../dev/devStack.js';
import { NotReadyError, waitFor } from '../dev/waitFor.js';
import type { Log } from '../log.js';
import { formatEvents, formatTasks, summarise } from '../tasks/format.js';
import { TERMINAL_STATUSES } from '../tasks/states.js';
import { taskIdOf } from '../tasks/taskId.js';
import type { TaskEvent, TaskRow } from '../tasks/types.js';
import { connectClient } from '../temporal/connection.js';
import { uniqueGraphId } from '../testkit/graphs.js';
import { startToolServer } from '../testkit/toolServer.js';
import { toolServerControl } from '../testkit/toolServerProcess.js';
import { startWorkerFleet, type WorkerFleet } from '../testkit/workerFleet.js';
import { HTTP_TOOLS_ENV } from '../tools/httpToolsConfig.js';
import { toolCallKey } from '../tools/toolGateway.js';
import {
  CODE_HOST_TOOL,
  createSdkIntegrationRepo,
  OPEN_PR_STEP,
  REQUEST_AGENT,
  REQUEST_CHECK,
  RESPONSE_AGENT,
  RESPONSE_CHECK,
  TESTS_AGENT,
  TESTS_CHECK,
} from './sdkIntegrationRepo.js';

/** The demo's heartbeat timeout: short, so the recovery shows within seconds. */
const DEMO_HEARTBEAT_TIMEOUT_MS = 3_000;
const POLL_MS = 500;
/** How long the demo waits for everything before it gives up: a quiet machine needs about a minute, a busy one several. */
const DEMO_DEADLINE_MS = 600_000;

interface DemoOutcome {
  graphId: string;
  passed: boolean;
  checks: Array<{ what: string; ok: boolean }>;
}

/**
 * The SDK-integration demo: three tasks, two worker processes. Worker A is frozen (SIGSTOP)
 * while its agent builds the request code; Temporal's heartbeat timeout hands the task to worker
 * B with a new claim version; A is thawed and its late writes are refused. The response agent's
 * first artifact fails verification and its rerun passes. The tests task starts only after both;
 * its agent opens a pull request at a code host the demo serves, which creates the PR but holds
 * its answer while the demo SIGKILLs the worker that made the call: the next owner reconciles the
 * call through the code host's lookup and gets the same PR, so it is opened once.
 */
/** Where the demo runs: a stack that is up, a client's pool on its migrated database, and the workers' login. */
interface DemoStack {
  stack: DevStack;
  pool: Queryable;
  /** The logins of the embedded stack's components; the demo's workers use the worker's. (Default: the stack's URL) */
  componentUrls?: { worker: string };
}

/**
 * Runs the demo, logging its steps with `log`; `show` gets the task table each time it changes (a
 * terminal redraws it in place). (Default: `show` logs)
 */
export async function runDemo(open: DemoStack, log: Log, show: (text: string) => void = log): Promise<DemoOutcome> {
  const connection = await connectClient(open.stack.temporal);
  const temporal = new Client({ connection, namespace: open.stack.temporal.namespace });
  const repo = await createSdkIntegrationRepo();
  const codeHostServer = await startToolServer();
  const codeHost = toolServerControl(codeHostServer.url);
  let fleet: WorkerFleet | undefined;
  try {
    log(`Scratch repository with the SDK: ${repo}`);
    log('Bundling workflows once for both workers ...');
    fleet = await startWorkerFleet({
      name: 'demo',
      env: {
        DATABASE_URL: open.componentUrls?.worker ?? open.stack.databaseUrl,
        TEMPORAL_ADDRESS: open.stack.temporal.connectionOptions.address ?? '',
        TEMPORAL_NAMESPACE: open.stack.temporal.namespace,
        [HTTP_TOOLS_ENV]: JSON.stringify({
          [CODE_HOST_TOOL]: { url: `${codeHost.url}/effects`, lookupUrl: `${codeHost.url}/effects/{key}`, timeoutMs: DEMO_DEADLINE_MS },
        }),
      },
    });
    const { taskQueue } = fleet;
    const client = createBatonClient({ db: open.pool, temporal, taskQueue });
    log(`Code host (an HTTP tool with lookup by Idempotency-Key) at ${codeHost.url}.`);
    const workerA = fleet.spawn(`worker-a-${taskQueue.slice(-4)}`);
    log(`Started worker process ${workerA.identity} (pid ${workerA.child.pid}).`);

    const graph = await client.submitGraph(
      {
        id: uniqueGraphId('sdk'),
        repo,
        policy: { heartbeatTimeoutMs: DEMO_HEARTBEAT_TIMEOUT_MS, maxAttempts: 3, onVerificationFailure: 'rerun' },
        tasks: [
          { key: 'request', description: 'request construction', run: REQUEST_AGENT, verify: REQUEST_CHECK },
          { key: 'response', description: 'response parsing', run: RESPONSE_AGENT, verify: RESPONSE_CHECK },
          { key: 'tests', description: 'migration tests', run: TESTS_AGENT, verify: TESTS_CHECK, dependsOn: ['request', 'response'] },
        ],
      },
      'demo',
    );
    log(`Submitted graph ${graph.id}: request, response -> tests.`);
    const prKey = toolCallKey(taskIdOf(graph.id, 'tests'), OPEN_PR_STEP);
    await codeHost.setFaults(prKey, ['hold_after_commit']);

    const deadline = Date.now() + DEMO_DEADLINE_MS;
    let last = '';
    const table = async (): Promise<TaskRow[]> => {
      const tasks = await client.graphTasks(graph.id);
      const view = formatTasks(tasks);
      if (view !== last) {
        show(`\n[${new Date().toISOString().slice(11, 19)}Z] ${summarise(tasks)}\n${view}`);
        last = view;
      }
      return tasks;
    };
    const until = (what: string, done: (tasks: TaskRow[], events: TaskEvent[]) => boolean | Promise<boolean>) =>
      waitFor(
        what,
        async () => {
          if (!(await done(await table(), await client.events(graph.id)))) throw new Error('not yet');
        },
        { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: POLL_MS },
      ).catch(async (error: unknown) => {
        if (error instanceof NotReadyError) log(formatEvents(await client.events(graph.id), { showSubject: true }));
        throw error;
      });
    const task = (tasks: TaskRow[], key: string) => tasks.find((t) => t.key === key)!;

    await until('worker A to claim request', (tasks) => task(tasks, 'request').owner === workerA.identity);
    const workerB = fleet.spawn(`worker-b-${taskQueue.slice(-4)}`);
    log(`\nStarted worker process ${workerB.identity} (pid ${workerB.child.pid}).`);
    await until('worker B to poll', () => /polling task queue/.test(workerB.output()));
    let midRun = task(await table(), 'request');
    await until('worker A to be mid-run on request', (tasks) => {
      midRun = task(tasks, 'request');
      return midRun.status !== 'running' || (midRun.owner === workerA.identity && Number(midRun.progress?.lines ?? 0) >= 3);
    });
    if (midRun.status !== 'running' || midRun.owner !== workerA.identity) {
      // Only a task that is running can show a recovery: freezing A now would prove nothing.
      throw new Error(
        `the request task was ${midRun.status} (owner ${midRun.owner ?? 'none'}) before worker A could be frozen mid-run, ` +
          'so the recovery cannot be shown; its first attempt is meant to run for minutes',
      );
    }
    log(`\n>>> Freezing ${workerA.identity} (SIGSTOP, as a hung or cut-off worker looks) while its agent builds the request code.`);
    workerA.child.kill('SIGSTOP');
    await until(
      'the request task to be reclaimed',
      (tasks) => task(tasks, 'request').claimVersion >= 2 && task(tasks, 'request').owner === workerB.identity,
    );
    log(
      `\n>>> ${workerB.identity} holds request at claim version 2. Thawing ${workerA.identity} (SIGCONT): its late writes must be refused ` +
        '(its agent was still working when the task was reclaimed: the recovery stopped it, and its heartbeat or failure report is refused).',
    );
    workerA.child.kill('SIGCONT');
    await until("the tests agent's pull request to be created at the code host", async () => (await codeHost.held()).includes(prKey));
    const prOwner = (await client.task(taskIdOf(graph.id, 'tests'))).owner;
    const victim = fleet.ownerOf(prOwner);
    log(
      `\n>>> The code host created the pull request but holds its answer. SIGKILL ${victim.identity}, which made the call, before it can record the answer.`,
    );
    victim.child.kill('SIGKILL');
    const lateWrites = (events: TaskEvent[]) =>
      events.filter(
        (e) => e.subjectId === taskIdOf(graph.id, 'request') && e.kind === 'stale_write_refused' && e.actor === workerA.identity,
      );
    await until(
      'the graph to settle and the late write to be refused',
      (tasks, events) => tasks.every((t) => TERMINAL_STATUSES.has(t.status)) && lateWrites(events).length > 0,
    );

    const tasks = await client.graphTasks(graph.id);
    const events = await client.events(graph.id);
    log(`\nOwnership timeline of graph ${graph.id}:\n${formatEvents(events, { showSubject: true })}`);
    const of = (key: string) => events.filter((e) => e.subjectId === taskIdOf(graph.id, key));
    const verifiedAt = (key: string) => of(key).find((e) => e.kind === 'verified')?.id ?? Infinity;
    const checks = [
      { what: 'every task verified', ok: tasks.every((t) => t.status === 'verified') },
      {
        what: 'request recovered by another worker at claim version 2',
        // What the timeline shows, not who holds the task last: a retry failed later by mistake (the
        // silent-attempt watch, docs/tasks.md) costs another claim, never this recovery.
        ok:
          of('request').some((e) => e.kind === 'reclaimed_after_silence' && e.actor === workerB.identity) &&
          of('request').some((e) => e.kind === 'claimed' && e.actor === workerB.identity && e.fence === 2),
      },
      {
        what: `the frozen worker's late writes refused and logged (${[...new Set(lateWrites(events).map((e) => String(e.details.action)))].join(', ')})`,
        ok: lateWrites(events).length > 0,
      },
      { what: 'response rejected once, then verified on the rerun', ok: of('response').filter((e) => e.kind === 'rejected').length === 1 },
      {
        what: "tests' pull request opened once, reconciled by the next owner after a SIGKILL",
        ok:
          (await codeHost.effects()).filter((e) => e.key === prKey).length === 1 &&
          (await toolCallRead(open.pool, taskIdOf(graph.id, 'tests')))[0]?.status === 'reconciled_succeeded' &&
          of('tests').some(
            (e) => e.kind === 'tool_call_reconciled' && e.details.previous_owner === victim.identity && e.details.finding === 'found',
          ),
      },
      {
        what: 'tests released only after request and response were verified',
        ok: (of('tests').find((e) => e.kind === 'released')?.id ?? -1) > Math.max(verifiedAt('request'), verifiedAt('response')),
      },
    ];
    log('');
    for (const c of checks) log(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.what}`);
    return { graphId: graph.id, passed: checks.every((c) => c.ok), checks };
  } finally {
    await fleet?.stop('SIGTERM');
    await connection.close();
    await codeHostServer.close();
  }
}
