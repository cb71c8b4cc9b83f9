// What `baton token create` reads from its options: scopes and a lifetime, in words an operator types.
import { TOKEN_SCOPES, type TokenScope } from '../api/operationNames.js';
import { InvalidInputError } from '../errors.js';
import { durationMs } from './options.js';

/** Parses `read,objects`; an unknown scope is an error that names the valid ones. */
export function parseScopes(text: string): TokenScope[] {
  const scopes = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes.filter((s) => !(TOKEN_SCOPES as readonly string[]).includes(s));
  if (!scopes.length || unknown.length) {
    throw new InvalidInputError(`scope ${unknown.join(', ') || '(none)'}: scopes are ${TOKEN_SCOPES.join(', ')}, comma-separated`);
  }
  return scopes as TokenScope[];
}

/** Parses a lifetime such as `90m`, `12h`, `30d` into milliseconds. */
export function parseLifetime(text: string): number {
  const ms = durationMs(text);
  if (Number.isNaN(ms))
    throw new InvalidInputError(`expiry ${JSON.stringify(text)}: a number of minutes, hours or days, such as 90m, 12h or 30d`);
  return ms;
}
