import path from 'node:path';
import type { BundleOptions, BundlerPlugin, ReplayWorkerOptions, WorkerOptions, WorkerPlugin } from '@temporalio/worker';
import type { BatonActivities } from '../activities/index.js';
import { batonWorkflowsPath, workflowCode, workflowsPath, workflowsWithHostPath } from './dev/workflowBundle.js';
import { InvalidInputError } from './errors.js';
import { batonActivities, defaultWorkerIdentity, withWorkerLoops, type BatonActivityOptions } from './worker.js';

/** The module workflows/withHostWorkflows.ts re-exports a host's workflows from: an alias of the bundler's, never a package. */
const HOST_WORKFLOWS_MODULE = '__baton_host_workflows__';

export type BatonPluginOptions = BatonActivityOptions;

/** baton as a Temporal SDK plugin: a worker (or replay worker, or bundle) it is given to runs baton's workflows and activities too. */
export interface BatonPlugin extends WorkerPlugin, BundlerPlugin {
  /** The owner of every claim the worker's runs take (T5). */
  readonly identity: string;
}

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];
// webpack's own types, reached through the SDK's (webpack is the SDK's dependency, not baton's).
type WebpackPlugin = Exclude<
  NonNullable<WebpackConfig['plugins']>[number],
  ((...args: never[]) => unknown) | false | '' | 0 | null | undefined
>;
type WebpackCompiler = Parameters<WebpackPlugin['apply']>[0];

/**
 * T9, U8: adds baton to a worker of the host's own in one line,
 * `Worker.create({ ..., plugins: [createBatonPlugin({ db })] })`, on the host's connection,
 * namespace and task queue: baton's activities join the host's, and baton's workflows join the
 * host's `workflowsPath` (the plugin has the bundler compile both into one module), or are baton's
 * prebuilt bundle when the host has no workflows. A bundle the host builds itself must be built with
 * the plugin too: `bundleWorkflowCode({ workflowsPath, plugins: [baton] })`. Temporal marks plugins
 * experimental; docs/library.md says what that means here.
 */
export function createBatonPlugin(options: BatonPluginOptions): BatonPlugin {
  const identity = options.identity ?? defaultWorkerIdentity();
  // Built once: a plugin given to several workers gives each the same activities and identity.
  let activities: Promise<BatonActivities> | undefined;
  return {
    name: 'baton',
    identity,
    async configureWorker(worker: WorkerOptions): Promise<WorkerOptions> {
      activities ??= batonActivities(options, identity);
      const own = await activities;
      const hosts = Object.keys(worker.activities ?? {});
      const clashes = hosts.filter((name) => Object.hasOwn(own, name));
      // Either side silently replacing the other's activity would run the wrong code under its name.
      if (clashes.length)
        throw new InvalidInputError(`the worker's own activities ${clashes.map((n) => `'${n}'`).join(', ')} have the names of baton's`);
      return {
        ...worker,
        // Temporal's view of the worker names the owner of its claims, unless the host named it itself.
        identity: worker.identity ?? identity,
        activities: { ...worker.activities, ...own },
        ...(await batonWorkflowCode(worker)),
      };
    },
    // What runs beside baton's worker runs beside the host's, as in createBatonWorker.
    runWorker(worker, next) {
      return withWorkerLoops(options, worker.connection, worker.options.namespace, worker.options.identity, () => next(worker));
    },
    async configureReplayWorker(worker: ReplayWorkerOptions): Promise<ReplayWorkerOptions> {
      return { ...worker, ...(await batonWorkflowCode(worker)) };
    },
    configureBundler(bundle: BundleOptions): BundleOptions {
      if (bundle.workflowsPath === workflowsPath || bundle.workflowsPath === workflowsWithHostPath) return bundle;
      const hostWorkflows = path.resolve(bundle.workflowsPath);
      const hostHook = bundle.webpackConfigHook;
      return {
        ...bundle,
        workflowsPath: workflowsWithHostPath,
        webpackConfigHook: (config) => withHostWorkflowsAlias(hostHook ? hostHook(config) : config, hostWorkflows),
      };
    },
  };
}

/**
 * The workflow code a worker needs for baton: none when the host names its own (its `workflowsPath`
 * is bundled with baton's by `configureBundler`; its `workflowBundle` was built with the plugin, or
 * it cannot be changed), else baton's alone.
 */
async function batonWorkflowCode(worker: Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'>) {
  return worker.workflowsPath || worker.workflowBundle ? {} : await workflowCode();
}

/**
 * `config` with HOST_WORKFLOWS_MODULE (that exact request only) resolving to the host's workflows,
 * and a check that the bundle still exports every workflow of baton's.
 */
function withHostWorkflowsAlias(config: WebpackConfig, hostWorkflows: string): WebpackConfig {
  const alias = config.resolve?.alias;
  return {
    ...config,
    plugins: [...(config.plugins ?? []), batonWorkflowsExported],
    resolve: {
      ...config.resolve,
      alias: Array.isArray(alias)
        ? [...alias, { name: HOST_WORKFLOWS_MODULE, alias: hostWorkflows, onlyModule: true }]
        : { ...alias, [`${HOST_WORKFLOWS_MODULE}$`]: hostWorkflows },
    },
  };
}

/**
 * Fails the bundle when a workflow of the host's has the name of one of baton's: the two
 * `export *`s of the name cancel out, by ES module rules, and webpack says nothing, so the worker
 * would start without that workflow of baton's and its graphs would never run.
 */
const batonWorkflowsExported: WebpackPlugin = {
  apply(compiler: WebpackCompiler) {
    compiler.hooks.compilation.tap('baton', (compilation) => {
      // After webpack's own hooks at this point, which work out what each module exports.
      compilation.hooks.finishModules.tap({ name: 'baton', stage: 1_000 }, (modules) => {
        const moduleOf = (file: string) => [...modules].find((m) => 'resource' in m && m.resource === file);
        const [own, bundled] = [moduleOf(batonWorkflowsPath), moduleOf(workflowsWithHostPath)];
        const ownNames = own && compilation.moduleGraph.getProvidedExports(own);
        const bundledNames = bundled && compilation.moduleGraph.getProvidedExports(bundled);
        if (!Array.isArray(ownNames) || !Array.isArray(bundledNames)) return;
        const lost = ownNames.filter((name) => !bundledNames.includes(name));
        if (lost.length)
          compilation.errors.push(
            new compiler.webpack.WebpackError(
              `baton: the worker's own workflows export ${lost.map((n) => `'${n}'`).join(', ')}, the name of a workflow of baton's; rename the worker's`,
            ),
          );
      });
    });
  },
};
