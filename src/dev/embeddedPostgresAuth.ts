// How the embedded Postgres authenticates: SCRAM-SHA-256 for every login (no trust, no password
// in clear text), one superuser whose password baton generates and keeps in a secret file, and
// the one-time upgrade of a data folder an earlier baton initialised with a password written in
// its source.
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { SERVER_READY_TIMEOUT_MS_DEFAULT } from '../config.js';
import type { Log } from '../log.js';
import { setRolePassword } from '../db/logins.js';
import { generateSecret, readSecretFile, writeSecretFile } from './secretFile.js';
import { waitFor } from './waitFor.js';

/** The embedded server's pg_hba.conf: logins from this machine, SCRAM-SHA-256 only; no other line matches, so nothing else gets in. */
const EMBEDDED_PG_HBA = [
  '# Written by baton (src/dev/embeddedPostgresAuth.ts): every login proves its password with',
  '# SCRAM-SHA-256; no trust, no password in clear text. The superuser password is in the secret',
  '# file baton keeps beside this data folder (credentials/<folder>-superuser).',
  '# TYPE  DATABASE  USER  ADDRESS       METHOD',
  'local   all       all                 scram-sha-256',
  'host    all       all   127.0.0.1/32  scram-sha-256',
  'host    all       all   ::1/128       scram-sha-256',
  '',
].join('\n');

/** Server settings that go with EMBEDDED_PG_HBA, as `postgres` command-line flags. */
export const EMBEDDED_AUTH_FLAGS = ['-c', 'password_encryption=scram-sha-256'];

// The superuser password baton 0.1 gave every embedded data folder, written in its source. Kept
// only to replace it: after `upgradeLegacyDataFolder` it opens nothing.
const LEGACY_EMBEDDED_PASSWORD = 'baton';
const INVALID_PASSWORD_SQLSTATE = '28P01';

/** Replaces `dataDir/pg_hba.conf` with EMBEDDED_PG_HBA; the file keeps its owner and mode. A running server needs `pg_reload_conf()`. */
export async function writeScramHba(dataDir: string): Promise<void> {
  await writeFile(path.join(dataDir, 'pg_hba.conf'), EMBEDDED_PG_HBA);
}

/** Thrown when the embedded server accepts none of the passwords baton knows for it. */
export class EmbeddedPasswordRefusedError extends Error {
  override readonly name = 'EmbeddedPasswordRefusedError';
  constructor(
    readonly dataDir: string,
    readonly secretFile: string,
  ) {
    super(
      `the embedded Postgres in ${dataDir} does not accept the password in ${secretFile}` +
        (secretFile.endsWith('.pending') ? " nor baton's old built-in one" : '') +
        `; if either was replaced or copied from elsewhere, restore it, or delete ${dataDir} to start over (its data is lost)`,
    );
  }
}

/** Whether `error` is the server refusing a password (wrong password, or no such role). */
export function isPasswordRefused(error: unknown): boolean {
  return (error as { code?: string }).code === INVALID_PASSWORD_SQLSTATE;
}

/**
 * Upgrades a running server whose data folder has no secret file: a folder baton 0.1 made, whose
 * superuser password is the literal in its source and whose pg_hba.conf asks for it in clear
 * text. Logs in with that password once, sets a generated one (kept in `secretFile`), switches
 * pg_hba.conf to SCRAM and reloads it. The new password goes to `<secretFile>.pending` before the
 * server hears of it, so an upgrade cut short is finished by the next start. Returns the password.
 */
export async function upgradeLegacyDataFolder(options: {
  dataDir: string;
  port: number;
  user: string;
  secretFile: string;
  log: Log;
}): Promise<string> {
  const pendingFile = `${options.secretFile}.pending`;
  let secret = await readSecretFile(pendingFile).catch(() => undefined);
  if (secret === undefined) {
    secret = generateSecret();
    await writeSecretFile(pendingFile, secret);
  }
  const known = secret;
  let refused: Error | undefined;
  const { client, password } = await waitFor(
    'embedded Postgres',
    async () => {
      for (const password of [known, LEGACY_EMBEDDED_PASSWORD]) {
        const client = new pg.Client({ host: '127.0.0.1', port: options.port, user: options.user, password, database: 'postgres' });
        try {
          await client.connect();
          return { client, password };
        } catch (error) {
          await client.end().catch(() => {});
          if (!isPasswordRefused(error)) throw error;
        }
      }
      throw (refused = new EmbeddedPasswordRefusedError(options.dataDir, pendingFile));
    },
    { timeoutMs: SERVER_READY_TIMEOUT_MS_DEFAULT, abort: () => refused },
  );
  try {
    if (password !== secret) await setRolePassword(client, options.user, secret);
    await writeScramHba(options.dataDir);
    await client.query('SELECT pg_reload_conf()');
  } finally {
    await client.end();
  }
  await rename(pendingFile, options.secretFile);
  options.log(
    `Upgraded the embedded Postgres in ${options.dataDir}: it no longer accepts baton's old built-in password; ` +
      `its new password is in ${options.secretFile} (readable by this OS user only), and every login must use SCRAM-SHA-256.`,
  );
  return secret;
}
