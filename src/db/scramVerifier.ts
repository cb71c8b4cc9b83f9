// SCRAM-SHA-256 password verifiers as PostgreSQL stores them in pg_authid.rolpassword (RFC 5802,
// RFC 7677): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. Setting a password as
// its verifier keeps the password itself out of the server's statement text and logs, as psql's
// \password does. Passwords here are ASCII (what baton generates), which SASLprep leaves unchanged.
import { createHash, createHmac, pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

/** PBKDF2 iterations of a new verifier; PostgreSQL's own `scram_iterations` default. (Default: 4096) */
const SCRAM_ITERATIONS_DEFAULT = 4096;
/** Salt length of a new verifier, as PostgreSQL makes them. */
const SCRAM_SALT_BYTES = 16;
const SCRAM_KEY_BYTES = 32;
const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

interface ScramVerifierOptions {
  /** PBKDF2 iterations. (Default: 4096) */
  iterations?: number;
  /** (Default: 16 random bytes) */
  salt?: Buffer;
}

/** The verifier PostgreSQL would store for `password`; `ALTER ROLE ... PASSWORD '<verifier>'` sets it. */
export function scramSha256Verifier(password: string, options: ScramVerifierOptions = {}): string {
  const iterations = options.iterations ?? SCRAM_ITERATIONS_DEFAULT;
  const salt = options.salt ?? randomBytes(SCRAM_SALT_BYTES);
  const { storedKey, serverKey } = scramKeys(pbkdf2Sync(password, salt, iterations, SCRAM_KEY_BYTES, 'sha256'));
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

const pbkdf2Async = promisify(pbkdf2);

/**
 * Whether a login with `password` would pass the server's check against `verifier`: the same
 * comparison PostgreSQL makes, without a connection. Its PBKDF2 runs on libuv's thread pool, so
 * many candidate strings checked at once use every core. Anything that is not a SCRAM-SHA-256
 * verifier (an md5 hash, a plain text) answers false.
 */
export async function scramVerifierAccepts(verifier: string, password: string): Promise<boolean> {
  const parts = VERIFIER.exec(verifier);
  if (!parts) return false;
  const salted = await pbkdf2Async(password, Buffer.from(parts[2]!, 'base64'), Number(parts[1]), SCRAM_KEY_BYTES, 'sha256');
  const { storedKey } = scramKeys(salted);
  const expected = Buffer.from(parts[3]!, 'base64');
  return expected.length === storedKey.length && timingSafeEqual(expected, storedKey);
}

/** RFC 5802's keys from the salted password (PBKDF2 of the password with the verifier's salt and iterations). */
function scramKeys(salted: Buffer): { storedKey: Buffer; serverKey: Buffer } {
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return {
    storedKey: createHash('sha256').update(clientKey).digest(),
    serverKey: createHmac('sha256', salted).update('Server Key').digest(),
  };
}
