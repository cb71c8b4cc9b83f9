import type { Command } from 'commander';
import type { Log } from '../log.js';
import { jsonOption } from './options.js';

export function registerDoctorCommand(program: Command, log: Log): void {
  program
    .command('doctor')
    .description(
      "check the deployment's security posture (DATABASE_URL's login, grants, function definitions, authentication, agent " +
        "isolation from BATON_AGENT_*, Temporal credentials; on `baton dev`'s stack, its superuser reads the authentication rules); " +
        'exits 1 when anything is found (docs/security.md)',
    )
    .addOption(jsonOption('the findings as one JSON array'))
    .action(async (opts: { json?: boolean }) => {
      const [{ devAdministratorUrl, withCliContext }, { createPool }, { runDoctor }, { agentIsolationFromEnv, agentIsolationStatus }] =
        await Promise.all([
          import('./context.js'),
          import('../db/pool.js'),
          import('../doctor/runDoctor.js'),
          import('../runners/isolation/agentIsolation.js'),
        ]);
      await withCliContext(log, { migrate: false, applicationName: 'baton doctor' }, async (context) => {
        // On `baton dev`'s stack its superuser reads the authentication rules, which no component login may.
        const adminUrl = await devAdministratorUrl(context.databaseUrl, context.devHome);
        const administrator = adminUrl ? createPool(adminUrl, { max: 1, applicationName: 'baton doctor' }) : undefined;
        const findings = await runDoctor({
          db: context.pool,
          administrator,
          temporal: context.temporalSettings,
          isolation: await agentIsolationStatus(agentIsolationFromEnv()),
        }).finally(() => administrator?.end());
        if (opts.json) process.stdout.write(`${JSON.stringify(findings)}\n`);
        else if (!findings.length) process.stdout.write('no findings\n');
        for (const f of opts.json ? [] : findings) process.stdout.write(`${f.check}: ${f.message}${f.fix ? `\n  fix: ${f.fix}` : ''}\n`);
        if (findings.length) process.exitCode = 1;
      });
    });
}
