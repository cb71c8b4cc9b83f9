// A token's secret: made here, shown once, and stored by the database only as its SHA-256.
import { createHash, randomBytes } from 'node:crypto';

/** Prefix of every secret baton issues, so secret scanners and people can tell what it is. */
const TOKEN_SECRET_PREFIX = 'baton_';

/** A new token secret: 256 random bits. */
export function newTokenSecret(): string {
  return `${TOKEN_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The SHA-256 the store keeps of a token's secret, as hex. */
export function secretSha256(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
