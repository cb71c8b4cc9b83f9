import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import { PACKAGE_ROOT } from '../packageRoot.js';

/** baton's workflow code: `.ts` when run from source, `.js` when run from the built package. */
export const workflowsPath = fileURLToPath(
  new URL(`../../workflows/index${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** The bundle the package build writes beside the compiled code, and the workflow SDK version it holds. */
export const PREBUILT_WORKFLOW_BUNDLE = path.join(PACKAGE_ROOT, 'dist', 'workflow-bundle.js');
const PREBUILT_WORKFLOW_BUNDLE_SDK = path.join(PACKAGE_ROOT, 'dist', 'workflow-bundle.sdk-version');

/** A logger that keeps webpack's bundling chatter out of baton's output. */
export const QUIET_BUNDLER_LOGGER = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** The version of `@temporalio/workflow` that bundling baton's workflows here would use. */
export function workflowSdkVersion(): string {
  const require = createRequire(workflowsPath);
  return (JSON.parse(readFileSync(require.resolve('@temporalio/workflow/package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Where a worker gets baton's workflow code: the prebuilt bundle when this is the built package and
 * the bundle was built with the workflow SDK installed here (a bundle must match its worker's SDK),
 * else the workflow sources, bundled as the worker starts (seconds on a small machine).
 */
export function workflowCode(): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const built = existsSync(PREBUILT_WORKFLOW_BUNDLE_SDK) && path.extname(workflowsPath) === '.js';
  if (built && readFileSync(PREBUILT_WORKFLOW_BUNDLE_SDK, 'utf8').trim() === workflowSdkVersion()) {
    return { workflowBundle: { codePath: PREBUILT_WORKFLOW_BUNDLE } };
  }
  return { workflowsPath };
}

/**
 * Bundles baton's workflow code once and writes it to `file`, so several worker processes (or a
 * test run, or the package) can start from it instead of each bundling for seconds on a small
 * machine.
 */
export async function writeWorkflowBundle(file: string, path: string = workflowsPath): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath: path, logger: QUIET_BUNDLER_LOGGER });
  await writeFile(file, code);
  return file;
}

/** Writes the package's prebuilt bundle and the SDK version it holds (the package build calls it). */
export async function writePrebuiltWorkflowBundle(): Promise<void> {
  await writeWorkflowBundle(PREBUILT_WORKFLOW_BUNDLE);
  await writeFile(PREBUILT_WORKFLOW_BUNDLE_SDK, `${workflowSdkVersion()}\n`);
}
