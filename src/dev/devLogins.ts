// The logins `baton dev` gives its own components (SPEC S1): the superuser migrates and creates
// them; the worker then runs as a member of baton_worker and the CLI as a member of baton_client,
// each with a generated password kept beside the superuser's (readable by this OS user only).
import path from 'node:path';
import { CREDENTIALS_DIR_NAME, DATABASE_URL_ENV } from '../config.js';
import { asLogin, ensureComponentLogin } from '../db/logins.js';
import type { Queryable } from '../db/queryable.js';
import type { GroupRole } from '../db/roles.js';
import { generateSecret, readSecretFile, SecretFileUnreadableError, writeSecretFile } from './secretFile.js';

/** The components of a local stack that connect to Postgres, with their login and group role. */
export const DEV_LOGINS = {
  worker: { login: 'baton_dev_worker', group: 'baton_worker' },
  client: { login: 'baton_dev_client', group: 'baton_client' },
  agent: { login: 'baton_dev_agent', group: 'baton_agent' },
} as const satisfies Record<string, { login: string; group: GroupRole }>;

export type DevComponent = keyof typeof DEV_LOGINS;

/** Where the password of `component`'s login is kept under the stack's `home`. */
export function devLoginSecretFile(home: string, component: DevComponent): string {
  return path.join(home, CREDENTIALS_DIR_NAME, `postgres-${component}`);
}

/**
 * Creates (or re-keys) every component login through `admin`, a superuser connection, generating
 * a password the first time; returns each login's URL on the server of `adminUrl`.
 */
export async function ensureDevLogins(admin: Queryable, adminUrl: string, home: string): Promise<Record<DevComponent, string>> {
  const urls = {} as Record<DevComponent, string>;
  for (const [component, { login, group }] of Object.entries(DEV_LOGINS) as [DevComponent, (typeof DEV_LOGINS)[DevComponent]][]) {
    const file = devLoginSecretFile(home, component);
    const password = await readSecretFile(file).catch(async (error: unknown) => {
      if (!(error instanceof SecretFileUnreadableError && error.reason === 'ENOENT')) throw error;
      const secret = generateSecret();
      await writeSecretFile(file, secret);
      return secret;
    });
    await ensureComponentLogin(admin, login, group, password);
    urls[component] = asLogin(adminUrl, login, password);
  }
  return urls;
}

/** `component`'s login on the stack whose superuser URL is `adminUrl`, from its secret file in `home`. */
export async function devLoginUrl(adminUrl: string, home: string, component: DevComponent): Promise<string> {
  const password = await readSecretFile(devLoginSecretFile(home, component), {
    missing: `start 'npx baton dev' (it creates the login at start), or set ${DATABASE_URL_ENV}`,
    unreadable: `set ${DATABASE_URL_ENV}`,
  });
  return asLogin(adminUrl, DEV_LOGINS[component].login, password);
}
