// SCRAM-SHA-256 password verifiers as PostgreSQL stores them in pg_authid.rolpassword (RFC 5802,
// RFC 7677): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. Setting a password as
// its verifier keeps the password itself out of the server's statement text and logs, as psql's
// \password does. Passwords here are ASCII (what baton generates), which SASLprep leaves unchanged.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

/** PBKDF2 iterations of a new verifier; PostgreSQL's own `scram_iterations` default. (Default: 4096) */
export const SCRAM_ITERATIONS_DEFAULT = 4096;
/** Salt length of a new verifier, as PostgreSQL makes them. */
const SCRAM_SALT_BYTES = 16;
const SCRAM_KEY_BYTES = 32;
const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

export interface ScramVerifierOptions {
  /** PBKDF2 iterations. (Default: 4096) */
  iterations?: number;
  /** (Default: 16 random bytes) */
  salt?: Buffer;
}

/** The verifier PostgreSQL would store for `password`; `ALTER ROLE ... PASSWORD '<verifier>'` sets it. */
export function scramSha256Verifier(password: string, options: ScramVerifierOptions = {}): string {
  const iterations = options.iterations ?? SCRAM_ITERATIONS_DEFAULT;
  const salt = options.salt ?? randomBytes(SCRAM_SALT_BYTES);
  const { storedKey, serverKey } = scramKeys(password, salt, iterations);
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/**
 * Whether a login with `password` would pass the server's check against `verifier`: the same
 * comparison PostgreSQL makes, without a connection (checking many candidate strings stays fast).
 * Anything that is not a SCRAM-SHA-256 verifier (an md5 hash, a plain text) answers false.
 */
export function scramVerifierAccepts(verifier: string, password: string): boolean {
  const parts = VERIFIER.exec(verifier);
  if (!parts) return false;
  const { storedKey } = scramKeys(password, Buffer.from(parts[2]!, 'base64'), Number(parts[1]));
  const expected = Buffer.from(parts[3]!, 'base64');
  return expected.length === storedKey.length && timingSafeEqual(expected, storedKey);
}

function scramKeys(password: string, salt: Buffer, iterations: number): { storedKey: Buffer; serverKey: Buffer } {
  const salted = pbkdf2Sync(password, salt, iterations, SCRAM_KEY_BYTES, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return {
    storedKey: createHash('sha256').update(clientKey).digest(),
    serverKey: createHmac('sha256', salted).update('Server Key').digest(),
  };
}
