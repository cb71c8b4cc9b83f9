import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';

/**
 * T6: before a silent owner's task is claimed again, stop its agent where this machine can: if the
 * agent process recorded in the last heartbeat runs here and still carries that claim in its
 * environment, kill its process group. Elsewhere, isolation rests on the claim version: the next
 * claim bumps it, so every later write of the old owner is refused. Returns what was done.
 */
export async function isolateOwner(taskId: string, claimVersion: number, progress: Record<string, unknown> | null): Promise<string> {
  const pid = typeof progress?.pid === 'number' ? progress.pid : undefined;
  const host = typeof progress?.host === 'string' ? progress.host : undefined;
  if (!pid || !host) return 'no agent process recorded; later writes are fenced by the claim version';
  if (host !== hostname()) return `agent pid ${pid} runs on ${host}; later writes are fenced by the claim version`;
  const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => undefined);
  if (environ === undefined) return `agent pid ${pid} on ${host} had already exited`;
  // The pid may have been reused: kill only a process that still holds this very claim.
  if (!environ.split('\0').includes(`BATON_CLAIM=${taskId}@${claimVersion}`)) {
    return `pid ${pid} on ${host} no longer runs this claim's agent`;
  }
  try {
    process.kill(-pid, 'SIGKILL');
    return `killed agent process group ${pid} on ${host}`;
  } catch (error) {
    return `could not kill agent pid ${pid} on ${host}: ${(error as Error).message}; later writes are fenced by the claim version`;
  }
}
