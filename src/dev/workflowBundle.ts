import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

/** baton's workflow code: `.ts` when run from source, `.js` when run from the built package. */
export const workflowsPath = fileURLToPath(
  new URL(`../../workflows/index${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** A logger that keeps webpack's bundling chatter out of baton's output. */
export const QUIET_BUNDLER_LOGGER = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * Bundles baton's workflow code once and writes it to `file`, so several worker processes (or a
 * test run) can start from it instead of each bundling for seconds on a small machine.
 */
export async function writeWorkflowBundle(file: string, path: string = workflowsPath): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath: path, logger: QUIET_BUNDLER_LOGGER });
  await writeFile(file, code);
  return file;
}
