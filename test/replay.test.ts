import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { QUIET_BUNDLER_LOGGER } from '../src/dev/workflowBundle.js';

// Saved by scripts/record-history.ts from a real run on the Temporal dev server.
const fixture = new URL('./fixtures/healthCheckWorkflow.history.json', import.meta.url);

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

  it('fails to replay the same history against an incompatible edit of the workflow', async () => {
    const changed = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./fixtures/changedWorkflows.ts', import.meta.url)),
      logger: QUIET_BUNDLER_LOGGER,
    });
    await expect(
      Worker.runReplayHistory({ workflowBundle: changed }, await savedHistory(), 'saved-health-check'),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
