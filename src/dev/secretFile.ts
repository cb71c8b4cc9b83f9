// Generated secrets live in files only their owner can read (a 0700 folder, a 0600 file), never
// in the source tree, the docs or a command line.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { run } from './run.js';

/** Random bytes in a generated secret: 256 bits, 43 URL-safe characters. (Default: 32) */
const SECRET_BYTES_DEFAULT = 32;
/** Mode of a secret file: read and write for its owner only. */
export const SECRET_FILE_MODE = 0o600;
/** Mode of the folder that holds secret files: its owner only. */
const SECRET_DIR_MODE = 0o700;

/** A new random secret, URL-safe base64 (it goes into connection strings unescaped). */
export function generateSecret(bytes: number = SECRET_BYTES_DEFAULT): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Writes `secret` to `file` (mode 0600, owned by this process's OS user), creating its folder
 * with mode 0700. The file is replaced atomically and synced, so a crash leaves the old secret or
 * the new one, never half of one.
 */
export async function writeSecretFile(file: string, secret: string): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: SECRET_DIR_MODE });
  await chmod(dir, SECRET_DIR_MODE); // an older folder may have been made with a wider mode
  const partial = `${file}.${process.pid}.partial`;
  const handle = await open(partial, 'wx', SECRET_FILE_MODE);
  try {
    await handle.writeFile(`${secret}\n`);
    await handle.chmod(SECRET_FILE_MODE); // `open` applies the umask, which may only narrow it
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(partial, file);
}

/** What to do instead when a secret file cannot be read, appended to the error. */
interface SecretFileHints {
  /** When the file does not exist, e.g. "start 'npx baton dev'". (Default: none) */
  missing?: string;
  /** When it belongs to another user, e.g. "set DATABASE_URL". (Default: none) */
  unreadable?: string;
}

/** Thrown when a secret file baton needs cannot be read by this OS user; says which file and who can. */
export class SecretFileUnreadableError extends Error {
  override readonly name = 'SecretFileUnreadableError';
  constructor(
    readonly file: string,
    /** The errno code of the failed read: `ENOENT` (missing), `EACCES` (another user's), ...; or `empty`. */
    readonly reason: string,
    /** The OS user that owns the file (or, when this user cannot even look, its folder). */
    readonly owner: string | undefined,
    hints: SecretFileHints = {},
  ) {
    const missing = `${hints.missing ? `; ${hints.missing}` : ''}`;
    super(
      reason === 'ENOENT'
        ? `${file} does not exist${missing}`
        : reason === 'empty'
          ? `${file} is empty${missing}`
          : `cannot read ${file} (${reason}): only its owner${owner ? `, the OS user ${owner},` : ''} may read it ` +
            `(you are ${currentUser()}); run this as ${owner ?? 'that user'}${hints.unreadable ? `, or ${hints.unreadable}` : ''}`,
    );
  }
}

/**
 * Reads a secret written by `writeSecretFile`.
 * @throws SecretFileUnreadableError when the file is missing, empty or not readable by this user.
 */
export async function readSecretFile(file: string, hints: SecretFileHints = {}): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new SecretFileUnreadableError(file, code, code === 'ENOENT' ? undefined : await ownerOf(file), hints);
  }
  const secret = text.trim();
  if (!secret) throw new SecretFileUnreadableError(file, 'empty', await ownerOf(file), hints);
  return secret;
}

/** The name of the OS user owning `file`, or its nearest folder this user can look at. */
async function ownerOf(file: string): Promise<string | undefined> {
  for (let current = file; ; current = path.dirname(current)) {
    const info = await stat(current).catch(() => undefined);
    if (info) return userName(info.uid);
    if (current === path.dirname(current)) return undefined;
  }
}

async function userName(uid: number): Promise<string> {
  const name = await run('id', ['-nu', String(uid)]).then(
    (r) => r.stdout.trim(),
    () => '',
  );
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

function currentUser(): string {
  try {
    const me = userInfo();
    return `${me.username} (uid ${me.uid})`;
  } catch {
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}
