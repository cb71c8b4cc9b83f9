import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Argument, type Command } from 'commander';
import { batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../config.js';
import {
  D5_AMBIGUOUS_CALLS_DEFAULT,
  D5_KILL_TRIALS_DEFAULT,
  DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT,
  RESTART_TRIALS_DEFAULT,
  type DrillResult,
} from '../drills/types.js';
import type { Log } from '../log.js';
import { liveBlock } from './liveBlock.js';
import { jsonOption, parseNonNegativeInt, parsePositiveInt } from './options.js';
import { installTemporalRuntime } from './temporalRuntime.js';

/** One line per drill on stdout, each followed by its violations, indented. */
function printResults(results: DrillResult[]): void {
  for (const r of results) {
    const figures = Object.entries(r.figures)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    process.stdout.write(`${r.drill}  ${r.passed ? 'PASS' : 'FAIL'}  ${r.title.padEnd(44)}  ${figures}\n`);
    for (const v of r.violations) process.stdout.write(`    ${v}\n`);
  }
}

/** The drills in the order `baton drill` runs them. */
const DRILLS = ['D1', 'D2', 'D3', 'D4', 'D5', 'R1', 'R2'] as const;
type DrillName = (typeof DRILLS)[number];

interface DrillOptions {
  json?: boolean;
  claimTrials: number;
  killTrials: number;
  killLanes: number;
  freezeTrials: number;
  rejectTrials: number;
  keep?: boolean;
  heartbeatTimeoutMs: number;
  toolCalls: number;
  toolKillTrials: number;
  restartTrials: number;
}

export function registerDrillCommand(program: Command, log: Log): void {
  program
    .command('drill')
    .description(
      `run the failure drill D1-D5 against the deployment named by ${DATABASE_URL_ENV} / ${TEMPORAL_ADDRESS_ENV} ` +
        '(or a private embedded stack it starts itself, removed afterwards unless --keep), then R1 and R2: ' +
        "a Postgres and a Temporal dev server the drill starts for the purpose (the other half being the deployment's) " +
        'are restarted mid-graph; drill graphs are named d1-*, ..., r2-* (in a deployment they stay: its record is append-only); ' +
        'exits non-zero if any drill fails',
    )
    .addArgument(
      new Argument('[drills...]', 'the drills to run, in this order whatever order they are named in (default: all)').choices(DRILLS),
    )
    .addOption(jsonOption('the results as one JSON array'))
    .option('--claim-trials <n>', 'D1: races of two claims', parsePositiveInt, 1_000)
    .option(
      '--kill-trials <n>',
      'D2: owners silenced after claiming (SIGKILL right away, SIGKILL mid-run, SIGSTOP mid-run, in turn)',
      parsePositiveInt,
      6,
    )
    .option('--kill-lanes <n>', 'D2: trials run at once, each lane with two worker processes of its own', parsePositiveInt, 3)
    .option(
      '--freeze-trials <n>',
      'D3: owners frozen (SIGSTOP) mid-run, recovered through the heartbeat timeout, then resumed',
      parsePositiveInt,
      3,
    )
    .option('--reject-trials <n>', 'D4: graphs whose commit a real verifier rejects', parsePositiveInt, 3)
    .option(
      '--restart-trials <n>',
      'R1 and R2: restarts of each server mid-graph (0 skips both)',
      parseNonNegativeInt,
      RESTART_TRIALS_DEFAULT,
    )
    .option('--keep', "keep the private stack and R1's and R2's servers (their data and logs) after the drill")
    .option('--heartbeat-timeout-ms <ms>', 'heartbeat timeout of the drill tasks', parsePositiveInt, DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT)
    .option(
      '--tool-calls <n>',
      'D5: ambiguous tool calls (reset, timeout, 5xx, owner lost mid-call)',
      parsePositiveInt,
      D5_AMBIGUOUS_CALLS_DEFAULT,
    )
    .option(
      '--tool-kill-trials <n>',
      'D5: worker processes SIGKILLed between sending a tool call and recording its answer',
      parseNonNegativeInt,
      D5_KILL_TRIALS_DEFAULT,
    )
    .action(async (named: DrillName[], opts: DrillOptions) => {
      const selected = new Set<DrillName>(named.length ? named : DRILLS);
      if (opts.restartTrials === 0) for (const restart of ['R1', 'R2'] as const) selected.delete(restart);
      const external = Boolean(readEnv(DATABASE_URL_ENV)) && Boolean(readEnv(TEMPORAL_ADDRESS_ENV));
      if (!external && (readEnv(DATABASE_URL_ENV) || readEnv(TEMPORAL_ADDRESS_ENV))) {
        // Half a deployment would leave drill tasks in a real database with no workflow to finish them.
        throw new Error(
          `set both ${DATABASE_URL_ENV} and ${TEMPORAL_ADDRESS_ENV} to drill a deployment, or neither for a private embedded stack`,
        );
      }
      const [
        { runClaimRaceDrill },
        { runWorkerKillDrill },
        { runFrozenOwnerDrill },
        { runRejectedCommitDrill },
        { runToolReconciliationDrill },
        { runPostgresRestartDrill, runTemporalRestartDrill },
        { reachableDataFolder },
        { resolveTemporalCli },
        { openStack },
      ] = await Promise.all([
        import('../drills/d1ClaimRace.js'),
        import('../drills/d2WorkerKill.js'),
        import('../drills/d3StaleSubmit.js'),
        import('../drills/d4FailedVerification.js'),
        import('../drills/d5ToolReconciliation.js'),
        import('../drills/restarts.js'),
        import('../dev/embeddedPostgres.js'),
        import('../dev/temporalCli.js'),
        import('./stack.js'),
      ]);
      await installTemporalRuntime();
      // Without a deployment, a private stack on free ports, so a running `baton dev` is untouched.
      const privateHome = path.join(batonHome(), 'drill');
      const open = await openStack(
        log,
        external ? {} : { home: privateHome, postgresPort: 0, temporalPort: 0, headless: true, ephemeralTemporal: true },
        // The drill plays every part (client, worker, the owner's test-only moves): it keeps the migrating login.
        'admin',
      );
      const workerEnv = {
        DATABASE_URL: open.componentUrls?.worker ?? open.databaseUrl,
        TEMPORAL_ADDRESS: open.stack.temporal.connectionOptions.address ?? '',
        TEMPORAL_NAMESPACE: open.stack.temporal.namespace,
      };
      // The servers R1 and R2 restart live in the private stack's folder, or in one of their own.
      let restartHome = external ? undefined : privateHome;
      try {
        const restartsIn = (restartHome ??= await reachableDataFolder(batonHome(), 'drill-restarts-'));
        const temporal = await open.temporal();
        const results: DrillResult[] = [];
        // On a terminal, the running drill and its trial count are one line redrawn in place;
        // each finished drill leaves a line. Elsewhere, every line is printed as it comes.
        const live = liveBlock(process.stderr);
        const output = { log: live.log, progress: live.show };
        const step = async (name: DrillName, run: () => Promise<DrillResult>) => {
          if (!selected.has(name)) return;
          const started = Date.now();
          live.show(`Running ${name} ...`);
          const result = await run();
          results.push(result);
          live.clear();
          live.log(`${name} ${result.passed ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - started) / 1000)} s`);
        };
        await step('D1', () => runClaimRaceDrill(open.pool, { trials: opts.claimTrials }));
        await step('D2', () =>
          runWorkerKillDrill({
            pool: open.pool,
            temporal,
            workerEnv,
            trials: opts.killTrials,
            lanes: opts.killLanes,
            heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
            ...output,
          }),
        );
        await step('D3', () =>
          runFrozenOwnerDrill({
            pool: open.pool,
            temporal,
            workerEnv,
            trials: opts.freezeTrials,
            lanes: opts.killLanes,
            heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
            ...output,
          }),
        );
        await step('D4', () =>
          runRejectedCommitDrill({
            pool: open.pool,
            temporal,
            workerEnv,
            trials: opts.rejectTrials,
            heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
            ...output,
          }),
        );
        await step('D5', () =>
          runToolReconciliationDrill({
            pool: open.pool,
            ambiguousCalls: opts.toolCalls,
            kills: opts.toolKillTrials,
            temporal,
            workerEnv,
            heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
            ...output,
          }),
        );
        const restarts = { workerEnv, trials: opts.restartTrials, heartbeatTimeoutMs: opts.heartbeatTimeoutMs, ...output };
        await step('R1', () => runPostgresRestartDrill({ ...restarts, home: path.join(restartsIn, 'r1'), temporal }));
        await step('R2', async () =>
          runTemporalRestartDrill({
            ...restarts,
            home: path.join(restartsIn, 'r2'),
            pool: open.pool,
            temporalCliPath: open.stack.temporalCli?.path ?? (await resolveTemporalCli({ log: live.log })).path,
          }),
        );
        if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
        else printResults(results);
        if (results.some((r) => !r.passed)) process.exitCode = 1;
      } finally {
        await open.close();
        if (restartHome && !opts.keep) await rm(restartHome, { recursive: true, force: true });
        else if (restartHome) log(`Kept the drill's ${external ? 'restarted servers' : 'stack'} in ${restartHome}.`);
        if (external) log('The drill graphs (d1-* to d5-*, r2-*) stay in the deployment: its record is append-only.');
      }
    });
}
