// The baton plugin as Temporal's SDK calls it: what it does to a host's worker options and to the
// bundle of the host's workflows. test/examples/examples.test.ts runs it in a real worker.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { bundleWorkflowCode, Worker, type WorkerOptions } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createBatonPlugin } from '../src/batonPlugin.js';
import { QUIET_BUNDLER_LOGGER, workflowsPath } from '../src/dev/workflowBundle.js';
import { InvalidInputError } from '../src/errors.js';
import { PACKAGE_ROOT } from '../src/packageRoot.js';
import { installQuietTemporalRuntime } from './helpers/temporal.js';

installQuietTemporalRuntime();

const HOST_WORKFLOWS = path.join(PACKAGE_ROOT, 'examples', 'host', 'workflows.ts');
// Building the activities touches no database; a store call here would be a bug.
const db = { query: () => Promise.reject(new Error('no store call expected')) };
// No agent runs here: no isolation to probe (the sandbox check starts a process, and fails where none can run).
const plugin = () =>
  createBatonPlugin({ db, identity: 'plugin-test', log: () => {}, agentIsolation: { sandbox: 'none', user: 'worker', network: 'host' } });
/** baton's activity names, as a host's worker with the plugin gets them beside its own. */
const batonActivityNames = async () =>
  Object.keys((await plugin().configureWorker!({ taskQueue: 'q', workflowsPath: HOST_WORKFLOWS })).activities!);
const hostActivity = async () => 'host';

describe('createBatonPlugin', () => {
  it("adds baton's activities beside the host's and names the worker after the claims' owner", async () => {
    const batonOnly = await batonActivityNames();
    expect(batonOnly.length).toBeGreaterThan(5);
    const options = await plugin().configureWorker!({ taskQueue: 'q', activities: { hostActivity }, workflowsPath: HOST_WORKFLOWS });
    const activities = options.activities as Record<string, unknown>;
    expect(activities.hostActivity).toBe(hostActivity);
    expect(Object.keys(activities).sort()).toEqual([...batonOnly, 'hostActivity'].sort());
    expect(options.identity).toBe('plugin-test');
    // The host's workflows stay where they are: the bundler adds baton's to them.
    expect(options).toMatchObject({ workflowsPath: HOST_WORKFLOWS });
    expect(options.workflowBundle).toBeUndefined();
  });

  it("gives a worker with no workflows of its own baton's, and leaves an identity the host chose", async () => {
    const options = await plugin().configureWorker!({ taskQueue: 'q', identity: 'host-worker' });
    expect(options.identity).toBe('host-worker');
    expect(options.workflowBundle ?? options.workflowsPath).toBeDefined();
  });

  it("refuses a host activity named like one of baton's, naming it", async () => {
    const [batonActivity] = await batonActivityNames();
    const clashing: WorkerOptions = {
      taskQueue: 'q',
      workflowsPath: HOST_WORKFLOWS,
      activities: { [batonActivity!]: hostActivity, hostActivity },
    };
    const refusal = await Promise.resolve(plugin().configureWorker!(clashing)).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidInputError);
    expect((refusal as Error).message).toContain(`the worker's own activities '${batonActivity}' have the names of baton's`);
  });

  it("leaves a bundle of baton's workflows alone", () => {
    const bundle = { workflowsPath };
    expect(plugin().configureBundler!(bundle)).toBe(bundle);
  });

  it("bundles the host's workflows with baton's: one bundle holds both", async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: HOST_WORKFLOWS, plugins: [plugin()], logger: QUIET_BUNDLER_LOGGER });
    // Booleans: a failed match must not print a bundle of megabytes.
    expect(code.includes('withHostWorkflows')).toBe(true);
    expect(/async function greet\(/.test(code)).toBe(true);
    expect(/async function batonGraphWorkflow\(/.test(code)).toBe(true);
    expect(/async function batonTaskWorkflow\(/.test(code)).toBe(true);
  });

  it("replays a history of baton's workflows on a replay worker of the host's workflows", async () => {
    const [recorded] = JSON.parse(
      await readFile(new URL('./fixtures/taskWorkflows.prefixed.histories.json', import.meta.url), 'utf8'),
    ) as Array<{ workflowId: string; history: unknown }>;
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: HOST_WORKFLOWS, plugins: [plugin()] },
        historyFromJSON(recorded!.history),
        recorded!.workflowId,
      ),
    ).resolves.toBeUndefined();
  });

  it("keeps a host workflow named like one of baton 0.1's (graphWorkflow): only baton's own worker answers to those", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-plain-'));
    const host = path.join(dir, 'workflows.ts');
    await writeFile(host, `export async function graphWorkflow(): Promise<string> {\n  return 'host-own';\n}\n`);
    try {
      const { code } = await bundleWorkflowCode({ workflowsPath: host, plugins: [plugin()], logger: QUIET_BUNDLER_LOGGER });
      expect(code.includes('host-own')).toBe(true);
      expect(/async function batonGraphWorkflow\(/.test(code)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses to bundle a host workflow named like one of baton's, naming it", async () => {
    // Whatever baton's workflows are called, the host's file claims the first name.
    const [batonWorkflow] = Object.keys(await import('../workflows/batonWorkflows.js'));
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-clash-'));
    const host = path.join(dir, 'workflows.ts');
    await writeFile(host, `export async function ${batonWorkflow}(): Promise<string> {\n  return 'host';\n}\n`);
    const errors: string[] = [];
    const logger = { ...QUIET_BUNDLER_LOGGER, error: (message: string) => void errors.push(message) };
    try {
      // The outcome as text: a bundle that succeeded must not be printed whole.
      const outcome = await bundleWorkflowCode({ workflowsPath: host, plugins: [plugin()], logger }).then(
        () => 'bundled',
        (error: unknown) => String(error),
      );
      expect(outcome).toMatch(/Webpack finished with errors/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(errors.join('\n')).toContain(`baton: the worker's own workflows export '${batonWorkflow}', the name of a workflow of baton's`);
  });
});
