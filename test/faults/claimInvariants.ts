import type { AgentFunction } from '../../src/runners/functionRunner.js';
import type { TaskEvent } from '../../src/tasks/types.js';

/** One start of an agent: which worker ran it, for which claim. */
export interface AgentRun {
  worker: string;
  taskId: string;
  claimVersion: number;
}

/** Events that end a claim: after one, nothing may land under that claim version. */
const CLAIM_ENDED = new Set(['reclaimed_after_silence', 'claim_released', 'handed_back', 'attempt_failed', 'failed']);

/**
 * What must hold after any fault, read from a graph's event log (ordered by id) and the agent runs:
 * each task verified exactly once, nothing lost, each claim version claimed once, at most one
 * submit per claim, no write accepted under a claim after it ended (refusals only), and no agent
 * started twice for one claim. Returns every violation found, described.
 */
export function claimViolations(taskIds: string[], events: TaskEvent[], runs: AgentRun[]): string[] {
  const violations: string[] = [];
  const sorted = [...events].sort((a, b) => a.id - b.id);
  for (const taskId of taskIds) {
    const mine = sorted.filter((e) => e.subjectId === taskId);
    const verified = mine.filter((e) => e.kind === 'verified').length;
    if (verified !== 1) violations.push(`${taskId}: verified ${verified} times`);
    const count = (kind: string) => {
      const byFence = new Map<number | null, number>();
      for (const e of mine.filter((x) => x.kind === kind)) byFence.set(e.fence, (byFence.get(e.fence) ?? 0) + 1);
      return byFence;
    };
    for (const kind of ['claimed', 'submitted']) {
      for (const [fence, n] of count(kind)) if (n > 1) violations.push(`${taskId}: ${kind} ${n} times at claim version ${fence}`);
    }
    const ended = new Set<number | null>();
    for (const e of mine) {
      if (ended.has(e.fence) && e.kind !== 'stale_write_refused') {
        violations.push(`${taskId}: ${e.kind} by ${e.actor} landed at claim version ${e.fence} after that claim ended`);
      }
      if (CLAIM_ENDED.has(e.kind)) ended.add(e.fence);
    }
  }
  const seen = new Set<string>();
  for (const run of runs) {
    const key = `${run.taskId}@${run.claimVersion}`;
    if (seen.has(key)) violations.push(`${run.taskId}: agent started twice for claim version ${run.claimVersion}`);
    seen.add(key);
  }
  return violations;
}

/** Wraps an agent so each start is recorded in `runs` as `worker`'s. */
export function recorded(worker: string, runs: AgentRun[], agent: AgentFunction): AgentFunction {
  return (ctx) => {
    runs.push({ worker, taskId: ctx.claim.taskId, claimVersion: ctx.claim.claimVersion });
    return agent(ctx);
  };
}

/** A verifier that passes whatever it is given. */
export const passingVerifier = async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' });
