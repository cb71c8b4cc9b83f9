import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { QUIET_BUNDLER_LOGGER } from '../../src/dev/workflowBundle.js';
import { installQuietTemporalRuntime } from '../helpers/temporal.js';

installQuietTemporalRuntime();

// Saved by scripts/record-history.ts from a real run on the Temporal dev server.
const fixture = new URL('../fixtures/healthCheckWorkflow.history.json', import.meta.url);

async function savedHistory() {
  return historyFromJSON(JSON.parse(await readFile(fixture, 'utf8')));
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
    const recorded: Array<{ workflowId: string; what: string; history: unknown }> = JSON.parse(
      await readFile(new URL('../fixtures/taskWorkflows.before-wake.histories.json', import.meta.url), 'utf8'),
    );
    expect(recorded.map((r) => r.what)).toHaveLength(4);
    for (const { workflowId, history } of recorded) {
      await expect(
        Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, historyFromJSON(history), workflowId),
        workflowId,
      ).resolves.toBeUndefined();
    }
  });

  it.each([
    ['counted-dependencies', "recorded before the patch: the graph workflow counted each dependent's verified dependencies"],
    ['starts-released', 'recorded after it: the graph workflow started exactly the tasks each verification released'],
  ])('replays a graph run %s (%s)', async (label) => {
    // Recorded by scripts/recordGraphHistories.ts: a diamond a -> b, a -> c, b + c -> d. The graph
    // workflow decides which path to take by `patched` at its start, so both replay: the old history
    // has no marker and counts, the new one has it and reads the children's `released`.
    const recorded: Array<{ workflowId: string; what: string; history: unknown }> = JSON.parse(
      await readFile(new URL(`../fixtures/graphWorkflow.${label}.histories.json`, import.meta.url), 'utf8'),
    );
    expect(recorded.map((r) => r.workflowId.split(':')[0])).toEqual(['baton-graph', ...Array(4).fill('baton-task')]);
    for (const { workflowId, history } of recorded) {
      await expect(
        Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, historyFromJSON(history), workflowId),
        workflowId,
      ).resolves.toBeUndefined();
    }
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
