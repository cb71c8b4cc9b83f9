import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { QUIET_BUNDLER_LOGGER, workflowsPath } from '../../src/dev/workflowBundle.js';
import { installQuietTemporalRuntime } from '../helpers/temporal.js';

installQuietTemporalRuntime();

// Saved by scripts/record-history.ts from a real run on the Temporal dev server.
const fixture = new URL('../fixtures/healthCheckWorkflow.history.json', import.meta.url);

async function savedHistory() {
  return historyFromJSON(JSON.parse(await readFile(fixture, 'utf8')));
}

async function recordedHistories(file: string): Promise<Array<{ workflowId: string; what: string; history: unknown }>> {
  return JSON.parse(await readFile(new URL(`../fixtures/${file}`, import.meta.url), 'utf8'));
}

type RecordedHistory = Awaited<ReturnType<typeof recordedHistories>>[number];
type ReplayBundle = Parameters<typeof Worker.runReplayHistory>[0]['workflowBundle'];

/** baton's workflows as the suite built them: the current code. */
const currentCode = (): ReplayBundle => ({ codePath: inject('workflowBundlePath') });

/** Each recorded history replays against `bundle` (default: the current code). */
async function expectEachReplays(recorded: RecordedHistory[], bundle: ReplayBundle = currentCode()): Promise<void> {
  for (const { workflowId, history } of recorded)
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle }, historyFromJSON(history), workflowId),
      workflowId,
    ).resolves.toBeUndefined();
}

/** Each recorded history fails to replay against `bundle`, for nondeterminism. */
async function expectEachFails(recorded: RecordedHistory[], bundle: ReplayBundle): Promise<void> {
  for (const { workflowId, history } of recorded)
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle }, historyFromJSON(history), workflowId),
      workflowId,
    ).rejects.toBeInstanceOf(DeterminismViolationError);
}

/** The workflow types, activity types and signal names a history (as JSON) names. */
function temporalNames(history: unknown): string[] {
  type Attributes = { workflowType?: { name?: string }; activityType?: { name?: string }; signalName?: string };
  return (history as { events: Array<Record<string, Attributes | string>> }).events
    .flatMap((event) =>
      Object.values(event).flatMap((a) => (typeof a === 'object' && a ? [a.workflowType?.name, a.activityType?.name, a.signalName] : [])),
    )
    .filter((n): n is string => n !== undefined);
}

/** How many patch markers (workflows/patches.ts) a history (as JSON) records. */
function patchMarkers(history: unknown): number {
  return (history as { events: Array<{ markerRecordedEventAttributes?: unknown }> }).events.filter((e) => e.markerRecordedEventAttributes)
    .length;
}

/** What webpack lets a plugin change: the module a request names, before it is resolved. */
interface ModuleRequests {
  hooks: {
    normalModuleFactory: {
      tap(
        name: string,
        fn: (factory: { hooks: { beforeResolve: { tap(name: string, fn: (data: { request: string }) => void): void } } }) => void,
      ): void;
    };
  };
}

/** baton's workflows bundled with every import of `module` (`./prefixedNames.js`) served by `replacement`: a broken build. */
function bundleReplacing(module: string, replacement: URL) {
  return bundleWorkflowCode({
    workflowsPath,
    logger: QUIET_BUNDLER_LOGGER,
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        {
          apply(compiler: ModuleRequests) {
            compiler.hooks.normalModuleFactory.tap('replace', (factory) =>
              factory.hooks.beforeResolve.tap('replace', (data) => {
                if (data.request === module) data.request = fileURLToPath(replacement);
              }),
            );
          },
        },
      ],
    }),
  });
}

describe('workflow replay (no server needed)', () => {
  it('replays the saved health-check history against the current workflow code', async () => {
    const history = await savedHistory();
    expect(history.events?.length).toBeGreaterThan(5);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, 'saved-health-check'),
    ).resolves.toBeUndefined();
  });

  it('replays task and graph workflow histories recorded before a verification woke its dependents (T8)', async () => {
    // Recorded with the workflow code of commit 5d02f5d on the dev server: they call the activities as
    // that code did. The rerun's verification left a dependent stale and woke nothing, which the
    // current code replays only because its wake-ups sit behind `patched` (without it: nondeterminism).
    const recorded = await recordedHistories('taskWorkflows.before-wake.histories.json');
    expect(recorded.map((r) => r.what)).toHaveLength(4);
    await expectEachReplays(recorded);
  });

  it.each([
    ['counted-dependencies', "recorded before the patch: the graph workflow counted each dependent's verified dependencies"],
    ['starts-released', 'recorded after it: the graph workflow started exactly the tasks each verification released'],
  ])('replays a graph run %s (%s)', async (label) => {
    // Recorded by scripts/recordGraphHistories.ts: a diamond a -> b, a -> c, b + c -> d. The graph
    // workflow decides which path to take by `patched` at its start, so both replay: the old history
    // has no marker and counts, the new one has it and reads the children's `released`.
    const recorded = await recordedHistories(`graphWorkflow.${label}.histories.json`);
    expect(recorded.map((r) => r.workflowId.split(':')[0])).toEqual(['baton-graph', ...Array(4).fill('baton-task')]);
    await expectEachReplays(recorded);
  });

  it.each([
    ['wakes-by-activity', 'each execution records the patches it takes'],
    ['patch-level', 'each started with the patch level: no patch markers'],
  ])(
    'replays a graph run with no graph workflow (%s: %s): each verification wakes the workflows of the tasks it released',
    async (label) => {
      // Recorded by scripts/recordGraphHistories.ts: the diamond again, as the client starts it now.
      const recorded = await recordedHistories(`graphRun.${label}.histories.json`);
      expect(recorded.map((r) => r.workflowId.split(':')[0])).toEqual(Array(4).fill('baton-task'));
      // a released b and c, and one of those released d.
      expect(recorded.filter(({ history }) => temporalNames(history).includes('batonWakeTasks'))).toHaveLength(2);
      expect(recorded.every(({ history }) => patchMarkers(history) === 0)).toBe(label === 'patch-level');
      await expectEachReplays(recorded);
    },
  );

  it.each([
    ['before-prefix', "recorded before baton's names got their prefix: 0.1's names", false],
    ['prefixed', 'recorded after: the prefixed names', true],
  ])('replays task lifecycles %s (%s)', async (label, _what, prefixed) => {
    // Recorded by scripts/recordTaskHistories.ts: an upstream task rerun while its dependent runs (a
    // start by name and a signal), a rejected verification, used attempts and a cancelled graph.
    // sdk-core checks each activity's and child workflow's type on replay: the old histories replay
    // only because the names sit behind `patched` (workflows/prefixedNames.ts).
    const recorded = await recordedHistories(`taskWorkflows.${label}.histories.json`);
    const names = new Set(recorded.flatMap(({ history }) => temporalNames(history)));
    const name = (plain: string) => (prefixed ? `baton${plain[0]!.toUpperCase()}${plain.slice(1)}` : plain);
    for (const used of ['graphWorkflow', 'taskWorkflow', 'runTask', 'afterRejection', 'rerunTask', 'cancelTask', 'recheckTask'])
      expect(names).toContain(name(used));
    expect([...names].filter((n) => n.startsWith('baton') !== prefixed)).toEqual([]);
    await expectEachReplays(recorded);
  });

  it.each([
    ['paths', 'recorded when each graph had a workflow, and a verification started the workflows it woke as children'],
    ['paths-wake-by-activity', 'recorded after: no graph workflow, and one activity wakes them'],
    ['paths-patch-level', 'recorded after that: each task workflow started with the patch level, and no patch markers'],
  ])(
    'replays a recorded history of every path a task takes (%s: %s): success, rejection and rerun, stale rerun, cancellation, a pooled run recovered after silence, a drain hand-back',
    async (label) => {
      // Recorded by scripts/recordTaskHistories.ts. A recovery and a hand-back are retries of the run
      // activity, inside Temporal: the history shows them as the run's later attempt, with the failure
      // that ended the one before (a heartbeat timeout, a HandedBack failure).
      const recorded = await recordedHistories(`taskWorkflows.${label}.histories.json`);
      const names = new Set(recorded.flatMap(({ history }) => temporalNames(history)));
      expect(names.has('batonWakeTasks')).toBe(label !== 'paths');
      expect(names.has('batonGraphWorkflow')).toBe(label === 'paths');
      expect(recorded.some(({ history }) => patchMarkers(history) > 0)).toBe(label !== 'paths-patch-level');
      const scenarios = new Set(recorded.map(({ what }) => what.slice(0, what.indexOf(':'))));
      expect([...scenarios].sort()).toEqual([
        'a graph cancelled while its task runs',
        'a pooled run whose remote agent goes silent',
        'a run handed back by a worker shutting down, then run by the next worker',
        'a task whose runs fail until it has used its attempts',
        'a verification rejected once, then the task run and verified again',
        'an upstream rerun that releases a dependent whose workflow waits on it (signal)',
        'an upstream task rerun while its dependent runs (stale, re-run)',
      ]);
      type Started = {
        attempt?: number;
        lastFailure?: { applicationFailureInfo?: { type?: string }; timeoutFailureInfo?: { timeoutType?: string } };
      };
      const retriedAfter = recorded.flatMap(({ history }) =>
        (history as { events: Array<{ activityTaskStartedEventAttributes?: Started }> }).events
          .map((e) => e.activityTaskStartedEventAttributes)
          .filter((a): a is Started => (a?.attempt ?? 1) > 1)
          .map((a) => a.lastFailure?.applicationFailureInfo?.type ?? a.lastFailure?.timeoutFailureInfo?.timeoutType),
      );
      expect(retriedAfter).toEqual(expect.arrayContaining(['TIMEOUT_TYPE_HEARTBEAT', 'HandedBack']));
      await expectEachReplays(recorded);
    },
  );

  it('fails to replay the task lifecycles recorded before the prefix when the prefixed names do not wait for the patch', async () => {
    const unpatched = await bundleReplacing('./prefixedNames.js', new URL('../fixtures/unpatchedNames.ts', import.meta.url));
    await expectEachFails(await recordedHistories('taskWorkflows.before-prefix.histories.json'), unpatched);
  });

  it('fails to replay the verifications that started the tasks they woke as children when the wake by activity does not wait for its patch', async () => {
    const unpatched = await bundleReplacing('./wakeTask.js', new URL('../fixtures/unpatchedWakes.ts', import.meta.url));
    const waking = (await recordedHistories('taskWorkflows.paths.histories.json')).filter(
      ({ workflowId, history }) =>
        workflowId.startsWith('baton-task:') && JSON.stringify(history).includes('startChildWorkflowExecutionInitiatedEventAttributes'),
    );
    expect(waking.length).toBeGreaterThan(0);
    await expectEachFails(waking, unpatched);
    // The same histories replay on the real code: the failure is the patch's absence, not the history.
    await expectEachReplays(waking);
  });

  it('fails to replay the lifecycles started with a patch level when the workflows ask every patch of `patched()`', async () => {
    const asking = await bundleReplacing('./patches.js', new URL('../fixtures/patchesAsked.ts', import.meta.url));
    const recorded = [
      ...(await recordedHistories('taskWorkflows.paths-patch-level.histories.json')),
      ...(await recordedHistories('graphRun.patch-level.histories.json')),
    ];
    expect(recorded.length).toBeGreaterThan(10);
    await expectEachFails(recorded, asking);
  });

  it('fails to replay the same history against an incompatible edit of the workflow', async () => {
    const changed = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../fixtures/changedWorkflows.ts', import.meta.url)),
      logger: QUIET_BUNDLER_LOGGER,
    });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, await savedHistory(), 'saved-health-check')).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});
