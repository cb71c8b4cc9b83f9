// Bindings of src/db/functions/tokens.sql: tokens for the agent API (SPEC U3, T5), as an operator
// manages them, each binding named after the function it calls. The secret is printed once and
// never stored: the store keeps its SHA-256. (`run_token_issue` is called by src/db/sql/poolRuns.ts.)
import type { Queryable } from '../db/queryable.js';
import { callStore, callStoreValue } from '../db/storeCall.js';
import type { TokenScope } from './operationNames.js';
import { newTokenSecret, secretSha256 } from './tokenSecret.js';

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
  /** U11: the pools it may take work from (pool.claim); null: any. */
  pools: string[] | null;
}

/** S6: what a token's notes are limited to, the tasks of `graphs` and the `tasks` named. */
export interface NoteGrants {
  graphs: string[];
  tasks: string[];
}

/**
 * Issues a token for `identity`; returns its secret (shown once) and what is stored. With
 * `noteGrants` (graphs, tasks or both, which must exist) it reads and writes only their notes;
 * without, every task's. With `pools` it takes work from those pools only; without, from any.
 */
export async function agentTokenCreate(
  db: Queryable,
  input: {
    identity: string;
    scopes: readonly TokenScope[];
    expiresInMs?: number;
    createdBy: string;
    noteGrants?: Partial<NoteGrants>;
    pools?: readonly string[];
  },
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
    input.pools ?? null,
  ]);
  return { secret, token };
}

/** Every token, never its secret. */
export async function agentTokenList(db: Queryable): Promise<TokenInfo[]> {
  return (await callStore<{ agent_token_list: TokenInfo }>(db, 'agent_token_list', [])).map((r) => r.agent_token_list);
}

/** Revokes a token at once; revoking a revoked token changes nothing. */
export async function agentTokenRevoke(db: Queryable, input: { id: string; actor: string; reason?: string }): Promise<TokenInfo> {
  return callStoreValue<TokenInfo>(db, 'agent_token_revoke', [input.id, input.actor, input.reason ?? null]);
}
