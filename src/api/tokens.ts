// Tokens for the agent API (SPEC U3, T5), as an operator manages them. The secret is printed once
// and never stored: the store keeps its SHA-256 (src/db/functions/tokens.sql).
import type { Queryable } from '../db/queryable.js';
import { callStore, callStoreValue } from '../db/storeCall.js';
import { InvalidInputError } from '../errors.js';
import { newTokenSecret } from './agentApi.js';
import { secretSha256 } from './agentStore.js';
import { TOKEN_SCOPES, type TokenScope } from './operations.js';

/** A token as listed: never its secret. Times are the database's. */
export interface TokenInfo {
  id: string;
  identity: string;
  scopes: TokenScope[];
  createdBy: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  lastUsedAt: string | null;
  /** The graphs and tasks whose notes it may read and write; null: every task's (an operator's token). */
  noteGrants: NoteGrants | null;
}

/** S6: what a token's notes are limited to, the tasks of `graphs` and the `tasks` named. */
export interface NoteGrants {
  graphs: string[];
  tasks: string[];
}

/** Parses `read,objects`; an unknown scope is an error that names the valid ones. */
export function parseScopes(text: string): TokenScope[] {
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scopes.filter((s) => !(TOKEN_SCOPES as readonly string[]).includes(s));
  if (!scopes.length || unknown.length) {
    throw new InvalidInputError(`scope ${unknown.join(', ') || '(none)'}: scopes are ${TOKEN_SCOPES.join(', ')}, comma-separated`);
  }
  return scopes as TokenScope[];
}

/** Parses a lifetime such as `90m`, `12h`, `30d` into milliseconds. */
export function parseLifetime(text: string): number {
  const match = /^(\d{1,6})([mhd])$/.exec(text.trim());
  if (!match) throw new InvalidInputError(`expiry ${JSON.stringify(text)}: a number of minutes, hours or days, such as 90m, 12h or 30d`);
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}

/**
 * Issues a token for `identity`; returns its secret (shown once) and what is stored. With
 * `noteGrants` (graphs, tasks or both, which must exist) it reads and writes only their notes;
 * without, every task's.
 */
export async function createToken(
  db: Queryable,
  input: { identity: string; scopes: readonly TokenScope[]; expiresInMs?: number; createdBy: string; noteGrants?: Partial<NoteGrants> },
): Promise<{ secret: string; token: TokenInfo }> {
  const secret = newTokenSecret();
  const grants = input.noteGrants;
  const granted = grants !== undefined && (grants.graphs !== undefined || grants.tasks !== undefined);
  const token = await callStoreValue<TokenInfo>(db, 'agent_token_create', [
    input.identity,
    input.scopes,
    input.expiresInMs ?? null,
    Buffer.from(secretSha256(secret), 'hex'),
    input.createdBy,
    granted ? (grants.graphs ?? []) : null,
    granted ? (grants.tasks ?? []) : null,
  ]);
  return { secret, token };
}

export async function listTokens(db: Queryable): Promise<TokenInfo[]> {
  return (await callStore<{ agent_token_list: TokenInfo }>(db, 'agent_token_list', [])).map((r) => r.agent_token_list);
}

/** Revokes a token at once; revoking a revoked token changes nothing. */
export async function revokeToken(db: Queryable, input: { id: string; actor: string; reason?: string }): Promise<TokenInfo> {
  return callStoreValue<TokenInfo>(db, 'agent_token_revoke', [input.id, input.actor, input.reason ?? null]);
}
