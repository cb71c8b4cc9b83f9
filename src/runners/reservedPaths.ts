// U11: paths tied to objects. Before a run submits, its worker (never its agent) checks the commit
// against the paths objects reserve: one it changes that an object reserves, unless the run's agent
// holds that object, fails the run, and the refusal is recorded on the object.
import type { Queryable } from '../db/queryable.js';
import { objectPathsRefused, objectReservationsFor } from '../objects/objectStore.js';
import { changedSinceStart } from './artifactCheck.js';

/** The run whose commit is checked: its claim, and what the commit was built on. */
interface RunCommit {
  taskId: string;
  claimVersion: number;
  revision: string;
  baseCommit: string;
  /** Upstream key -> the verified revision the run was released against. */
  pins: Record<string, string>;
}

/**
 * Why the commit of `run` may not be submitted, recorded on each object whose reserved paths it
 * changes without the run's agent holding it; undefined when it may (or when no object reserves
 * anything, which asks git nothing).
 */
export async function reservedPathRefusal(db: Queryable, repo: string, run: RunCommit): Promise<string | undefined> {
  const reservations = await objectReservationsFor(db, run.taskId, run.claimVersion);
  if (reservations.length === 0) return undefined;
  // The run's starting tree is merged once, whatever the number of objects.
  const changedAmong = await changedSinceStart(repo, run);
  if (!changedAmong) return undefined;
  const reasons: string[] = [];
  for (const { key, paths } of reservations) {
    const changed = await changedAmong(paths);
    if (changed.length) reasons.push(await objectPathsRefused(db, key, run, changed));
  }
  return reasons.length ? reasons.join('; ') : undefined;
}
