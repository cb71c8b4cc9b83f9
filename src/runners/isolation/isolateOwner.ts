import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { environHoldsClaim } from './claimMarker.js';

/** An agent's processes: its process group, and the uid it runs as when that uid is its own. */
interface AgentProcesses {
  pgid?: number;
  user?: { uid: number; gid: number };
}

/**
 * SIGKILLs an agent: its process group and, when it runs under a per-run uid, every process of
 * that uid. The uid-wide kill is one kill(-1) made as that uid, so the kernel signals all of its
 * processes at once (nothing forked meanwhile survives) and also catches those that left the
 * group (setsid). Never the worker's own uid or root's.
 */
export async function killAgentProcesses(target: AgentProcesses): Promise<void> {
  if (target.pgid) {
    try {
      process.kill(-target.pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const user = target.user;
  if (!user || user.uid === 0 || user.uid === process.geteuid?.()) return;
  await new Promise<void>((resolve) => {
    const killer = spawn('/bin/sh', ['-c', 'kill -9 -1 2>/dev/null; exit 0'], {
      uid: user.uid,
      gid: user.gid,
      cwd: '/',
      stdio: 'ignore',
      env: {},
    });
    killer.once('error', () => resolve());
    killer.once('close', () => resolve());
  });
}

/**
 * T6: before a silent owner's task is claimed again, stop its agent where this machine can: if the
 * agent process recorded in the last heartbeat runs here and still carries that claim in its
 * environment, kill its process group and, for an agent under a per-run uid, every process of
 * that uid. Elsewhere, isolation rests on the claim version: the next claim bumps it, so every
 * later write of the old owner is refused. Returns what was done.
 */
export async function isolateOwner(taskId: string, claimVersion: number, progress: Record<string, unknown> | null): Promise<string> {
  const pid = typeof progress?.pid === 'number' ? progress.pid : undefined;
  const host = typeof progress?.host === 'string' ? progress.host : undefined;
  if (!pid || !host) return 'no agent process recorded; later writes are fenced by the claim version';
  if (host !== hostname()) return `agent pid ${pid} runs on ${host}; later writes are fenced by the claim version`;
  // Readable for another uid's agent too when this worker is root (as it must be to start one).
  const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => undefined);
  if (environ === undefined) return `agent pid ${pid} on ${host} had already exited`;
  // The pid may have been reused: kill only a process that still holds this very claim.
  if (!environHoldsClaim(environ, taskId, claimVersion)) {
    return `pid ${pid} on ${host} no longer runs this claim's agent`;
  }
  const processOwner = await processUser(pid);
  const user = processOwner && processOwner.uid !== 0 && processOwner.uid !== process.geteuid?.() ? processOwner : undefined;
  try {
    process.kill(-pid, 0);
  } catch (error) {
    return `could not kill agent pid ${pid} on ${host}: ${(error as Error).message}; later writes are fenced by the claim version`;
  }
  await killAgentProcesses({ pgid: pid, user });
  return `killed agent process group ${pid} on ${host}${user ? ` and every process of its uid ${user.uid}` : ''}`;
}

/** The real uid and gid of a process, from /proc. */
async function processUser(pid: number): Promise<{ uid: number; gid: number } | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
  const gid = /^Gid:\s+(\d+)/m.exec(status)?.[1];
  return uid !== undefined && gid !== undefined ? { uid: Number(uid), gid: Number(gid) } : undefined;
}
