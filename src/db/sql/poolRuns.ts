// Bindings of src/db/functions/pool_runs.sql: a claimed task offered to a pool of remote agents,
// and its run as the owning worker sees it (SPEC U7).
import type { Queryable } from '../queryable.js';
import { callStore, callStoreValue, type Fence } from '../storeCall.js';
import { fencedWrite } from './ownerWrites.js';

/** U11: at most `maxRunning` of `pool`'s tasks run at once, across every graph, as `actor` sets it; null lifts the limit. */
export function poolLimitSet(db: Queryable, pool: string, maxRunning: number | null, actor: string): Promise<number | null> {
  return callStoreValue<number | null>(db, 'pool_limit_set', [pool, maxRunning, actor]);
}

/** U7: offers the claimed task to the remote agents of `pool`; a second offer of the same claim changes nothing. */
export function poolOffer(db: Queryable, fence: Fence, pool: string) {
  return fencedWrite(db, fence, 'pool offer', 'pool_offer', [fence.taskId, fence.owner, fence.claimVersion, pool]);
}

/** A pooled run as its worker sees it: who took it, how long it has been silent (database clock), what it submitted. */
interface PoolRunState {
  agent: string | null;
  /** When the agent last showed it is alive (its claim, a heartbeat, its submit); changes with every beat. */
  beatAt: string | null;
  silentMs: number | null;
  progress: Record<string, unknown> | null;
  revision: string | null;
}

export async function poolRunState(db: Queryable, fence: Fence): Promise<PoolRunState> {
  const [row] = await callStore<{
    agent: string | null;
    beat_at: Date | null;
    silent_ms: string | null;
    progress: Record<string, unknown> | null;
    revision: string | null;
  }>(db, 'pool_run_state', [fence.taskId, fence.claimVersion]);
  return {
    agent: row?.agent ?? null,
    beatAt: row?.beat_at?.toISOString() ?? null,
    silentMs: row?.silent_ms == null ? null : Number(row.silent_ms),
    progress: row?.progress ?? null,
    revision: row?.revision ?? null,
  };
}
