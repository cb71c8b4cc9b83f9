import { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../config.js';
import { runClaimRaceDrill } from '../drills/d1ClaimRace.js';
import { DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT, runWorkerKillDrill } from '../drills/d2WorkerKill.js';
import { runStaleSubmitDrill } from '../drills/d3StaleSubmit.js';
import { runFailedVerificationDrill } from '../drills/d4FailedVerification.js';
import type { DrillResult } from '../drills/types.js';
import type { Log } from '../log.js';
import { connectClient } from '../temporal/connection.js';
import { openStack } from './stack.js';
import { parsePositiveInt } from './taskCommands.js';
import path from 'node:path';

function printResults(results: DrillResult[], log: Log): void {
  for (const r of results) {
    const figures = Object.entries(r.figures).map(([k, v]) => `${k}=${v}`).join(' ');
    process.stdout.write(`${r.drill}  ${r.passed ? 'PASS' : 'FAIL'}  ${r.title.padEnd(44)}  ${figures}\n`);
    for (const v of r.violations) log(`    ${v}`);
  }
}

export function registerDrillCommand(program: Command, log: Log): void {
  program
    .command('drill')
    .description(
      `run the failure drill D1-D4 against the deployment named by ${DATABASE_URL_ENV} / ${TEMPORAL_ADDRESS_ENV} ` +
        '(or an embedded stack it starts itself); drill graphs are named d1-*, d2-*, ...; exits non-zero if any drill fails',
    )
    .option('--json', 'print the results as JSON')
    .option('--claim-trials <n>', 'D1: races of two claims', parsePositiveInt, 1_000)
    .option('--kill-trials <n>', 'D2: worker processes SIGKILLed after claiming', parsePositiveInt, 4)
    .option('--trials <n>', 'D3 and D4: trials each', parsePositiveInt, 50)
    .option('--heartbeat-timeout-ms <ms>', 'D2: heartbeat timeout of the drill tasks', parsePositiveInt, DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT)
    .action(async (opts: { json?: boolean; claimTrials: number; killTrials: number; trials: number; heartbeatTimeoutMs: number }) => {
      const external = readEnv(DATABASE_URL_ENV) && readEnv(TEMPORAL_ADDRESS_ENV);
      // Without a deployment, a private stack on free ports, so a running `baton dev` is untouched.
      const open = await openStack(
        log,
        external ? {} : { home: path.join(batonHome(), 'drill'), postgresPort: 0, temporalPort: 0, headless: true, ephemeralTemporal: true },
      );
      const connection = await connectClient(open.stack.temporal);
      try {
        const results: DrillResult[] = [];
        const step = async (name: string, run: () => Promise<DrillResult>) => {
          log(`Running ${name} ...`);
          results.push(await run());
        };
        await step('D1', () => runClaimRaceDrill(open.pool, { trials: opts.claimTrials }));
        await step('D2', () =>
          runWorkerKillDrill({
            pool: open.pool,
            temporal: new Client({ connection, namespace: open.stack.temporal.namespace }),
            workerEnv: {
              DATABASE_URL: open.stack.databaseUrl,
              TEMPORAL_ADDRESS: open.stack.temporal.connectionOptions.address ?? '',
              TEMPORAL_NAMESPACE: open.stack.temporal.namespace,
            },
            trials: opts.killTrials,
            heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
            log,
          }),
        );
        await step('D3', () => runStaleSubmitDrill(open.pool, { trials: opts.trials }));
        await step('D4', () => runFailedVerificationDrill(open.pool, { trials: opts.trials }));
        if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
        else printResults(results, log);
        if (results.some((r) => !r.passed)) process.exitCode = 1;
      } finally {
        await connection.close();
        await open.close();
      }
    });
}
