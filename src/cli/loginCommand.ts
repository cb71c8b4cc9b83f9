import type { Command } from 'commander';
import { Option } from 'commander';
import { DATABASE_URL_ENV, readEnv } from '../config.js';
import type { GroupRole } from '../db/roles.js';
import type { Log } from '../log.js';

/** Where `baton login` reads the new login's password: never a command-line argument, which other users can see. */
const LOGIN_PASSWORD_ENV = 'BATON_LOGIN_PASSWORD';

/** The group roles (GROUP_ROLES in src/db/roles.ts) without their `baton_` prefix, named here so `--help` need not load the store. */
const LOGIN_ROLES = ['worker', 'client', 'reader', 'agent'] as const satisfies readonly (GroupRole extends `baton_${infer R}`
  ? R
  : never)[];

export function registerLoginCommand(program: Command, log: Log): void {
  program
    .command('login')
    .description(
      `create (or re-key) a component's database login, a member of one group role (docs/security.md#roles), as the administrator ` +
        `in ${DATABASE_URL_ENV}; the password is read from ${LOGIN_PASSWORD_ENV}`,
    )
    .argument('<name>', 'the login, e.g. baton_app_worker')
    .addOption(new Option('--role <role>', 'what the login is for').choices(LOGIN_ROLES).makeOptionMandatory())
    .action(async (name: string, opts: { role: string }) => {
      const password = readEnv(LOGIN_PASSWORD_ENV);
      if (!password) throw new Error(`${LOGIN_PASSWORD_ENV} is not set: it carries the new login's password`);
      const group = `baton_${opts.role}` as GroupRole;
      const [{ withCliContext }, { ensureComponentLogin }] = await Promise.all([import('./context.js'), import('../db/logins.js')]);
      await withCliContext(
        log,
        { migrate: false, databaseUrlRequired: 'baton login needs the administrator login', login: 'admin' },
        async ({ pool }) => {
          await ensureComponentLogin(pool, name, group, password);
          log(`Login ${name} is a member of ${group}.`);
        },
      );
    });
}
