import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkerInterceptors, type WorkerOptions } from '@temporalio/worker';
import { BATON_HOME_DIR_NAME } from '../config.js';
import { PACKAGE_ROOT } from '../packageRoot.js';

/** baton's workflow code: `.ts` when run from source, `.js` when run from the built package. */
export const workflowsPath = fileURLToPath(
  new URL(`../../workflows/index${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** baton's workflows under their prefixed types only, without the types of 0.1 (`workflowsPath` has both). */
export const batonWorkflowsPath = fileURLToPath(
  new URL(`../../workflows/batonWorkflows${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/**
 * baton's workflows together with a host's own, as one module: what the baton plugin bundles when
 * the host's worker names its own `workflowsPath` (src/batonPlugin.ts).
 */
export const workflowsWithHostPath = fileURLToPath(
  new URL(`../../workflows/withHostWorkflows${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
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
 * the bundle was built with the workflow SDK installed here (a bundle must match its worker's SDK);
 * in a checkout, the bundle of its current sources, made once per change (`cachedWorkflowBundle`);
 * else the workflow sources, bundled as the worker starts (seconds on a small machine).
 */
export async function workflowCode(
  interceptorModules: readonly string[] = [],
): Promise<Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> & { interceptors?: Pick<WorkerInterceptors, 'workflowModules'> }> {
  const built = path.extname(workflowsPath) === '.js';
  // Workflow interceptors (tracing's) are bundled in: the prebuilt bundle has none.
  if (interceptorModules.length)
    return built
      ? { workflowsPath, interceptors: { workflowModules: [...interceptorModules] } }
      : { workflowBundle: { codePath: await cachedWorkflowBundle(interceptorModules) } };
  if (
    built &&
    existsSync(PREBUILT_WORKFLOW_BUNDLE_SDK) &&
    readFileSync(PREBUILT_WORKFLOW_BUNDLE_SDK, 'utf8').trim() === workflowSdkVersion()
  ) {
    return { workflowBundle: { codePath: PREBUILT_WORKFLOW_BUNDLE } };
  }
  if (!built) return { workflowBundle: { codePath: await cachedWorkflowBundle() } };
  return { workflowsPath };
}

/** Where a checkout keeps the bundles of its workflow sources, one per version of them. */
export const WORKFLOW_BUNDLE_CACHE = path.join(PACKAGE_ROOT, BATON_HOME_DIR_NAME, 'cache', 'workflow-bundles');
/** How many bundles the cache keeps: the newest, so a checkout switching branches rebundles less. */
const CACHED_BUNDLES_KEPT = 4;

/**
 * The bundle of a checkout's workflow code as it is now, in `WORKFLOW_BUNDLE_CACHE`: made on first
 * use after any change and reused by every later worker (`baton dev`, `baton worker`, the tests),
 * which would otherwise each bundle for seconds. Its name is a hash of everything that can change
 * the bundle: every TypeScript file under src/ and workflows/ (more than the workflows import, so
 * never less), the lockfile and the workflow SDK's version. Written under a temporary name and
 * renamed, so processes starting together each see a whole bundle.
 */
export async function cachedWorkflowBundle(interceptorModules: readonly string[] = []): Promise<string> {
  const interceptors = interceptorModules.length
    ? `-${createHash('sha256').update(interceptorModules.join('\n')).digest('hex').slice(0, 8)}`
    : '';
  const file = path.join(WORKFLOW_BUNDLE_CACHE, `workflow-bundle-${await workflowSourceHash()}${interceptors}.js`);
  if (existsSync(file)) return file;
  await mkdir(WORKFLOW_BUNDLE_CACHE, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await writeWorkflowBundle(temp, workflowsPath, interceptorModules);
  await rename(temp, file);
  await pruneBundleCache();
  return file;
}

/** The hash naming a checkout's cached bundle: of its sources under `root`, its lockfile and the workflow SDK's version. */
export async function workflowSourceHash(root: string = PACKAGE_ROOT): Promise<string> {
  const hash = createHash('sha256').update(`@temporalio/workflow ${workflowSdkVersion()}\n`);
  const files: string[] = [];
  for (const dir of ['src', 'workflows']) {
    for (const entry of await readdir(path.join(root, dir), { recursive: true })) {
      if (entry.endsWith('.ts')) files.push(path.join(dir, entry));
    }
  }
  const lockfile = path.join(root, 'package-lock.json');
  if (existsSync(lockfile)) files.push('package-lock.json');
  for (const file of files.sort())
    hash
      .update(`${file}\n`)
      .update(await readFile(path.join(root, file)))
      .update('\n');
  return hash.digest('hex').slice(0, 24);
}

/** Removes all but the newest `CACHED_BUNDLES_KEPT` bundles, and temporary files an hour old (a killed process's). */
async function pruneBundleCache(): Promise<void> {
  const files = await Promise.all(
    (await readdir(WORKFLOW_BUNDLE_CACHE)).map(async (name) => {
      const mtime = (await stat(path.join(WORKFLOW_BUNDLE_CACHE, name)).catch(() => undefined))?.mtimeMs ?? 0;
      return { name, mtime };
    }),
  );
  const bundles = files.filter((f) => f.name.endsWith('.js')).sort((a, b) => b.mtime - a.mtime);
  const leftovers = files.filter((f) => f.name.endsWith('.tmp') && Date.now() - f.mtime > 3_600_000);
  await Promise.all(
    [...bundles.slice(CACHED_BUNDLES_KEPT), ...leftovers].map((f) => rm(path.join(WORKFLOW_BUNDLE_CACHE, f.name), { force: true })),
  );
}

/**
 * A file of baton's workflow bundle for several worker processes to start from: the prebuilt or
 * cached bundle `workflowCode` gives, else one bundled now and written to `fallback`.
 */
export async function workflowBundleFile(fallback: string): Promise<string> {
  const code = await workflowCode();
  return code.workflowBundle && 'codePath' in code.workflowBundle ? code.workflowBundle.codePath : writeWorkflowBundle(fallback);
}

/**
 * Bundles baton's workflow code once and writes it to `file`, so several worker processes (or a
 * test run, or the package) can start from it instead of each bundling for seconds on a small
 * machine.
 */
export async function writeWorkflowBundle(
  file: string,
  path: string = workflowsPath,
  workflowInterceptorModules: readonly string[] = [],
): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path,
    workflowInterceptorModules: [...workflowInterceptorModules],
    logger: QUIET_BUNDLER_LOGGER,
  });
  await writeFile(file, code);
  return file;
}

/** Writes the package's prebuilt bundle and the SDK version it holds (the package build calls it). */
export async function writePrebuiltWorkflowBundle(): Promise<void> {
  await writeWorkflowBundle(PREBUILT_WORKFLOW_BUNDLE);
  await writeFile(PREBUILT_WORKFLOW_BUNDLE_SDK, `${workflowSdkVersion()}\n`);
}
