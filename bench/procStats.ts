import { readdir, readFile, writeFile } from 'node:fs/promises';

// Linux reports process CPU time in clock ticks; USER_HZ is 100 on every mainstream kernel build.
const CLOCK_TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  cpuTicks: number;
}

async function readStat(pid: number): Promise<ProcStat | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  // The command name may contain spaces and parentheses; the fields after its closing one are fixed.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // utime + stime, plus cutime + cstime: the time of children already exited and reaped (e.g.
  // Postgres backends of closed connections), which live processes no longer show.
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]));
  return { pid, ppid: Number(fields[1]), cpuTicks: utime! + stime! + cutime! + cstime! };
}

async function allStats(): Promise<ProcStat[]> {
  const entries = (await readdir('/proc').catch(() => [] as string[])).filter((e) => /^\d+$/.test(e));
  const stats = await Promise.all(entries.map((e) => readStat(Number(e))));
  return stats.filter((s): s is ProcStat => s !== undefined);
}

/** CPU seconds (user + system) used so far by each root pid and all its live descendants. */
export async function cpuSecondsByTree(roots: Record<string, number | undefined>): Promise<Record<string, number>> {
  const stats = await allStats();
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const result: Record<string, number> = {};
  for (const [name, root] of Object.entries(roots)) {
    if (root === undefined || !byPid.has(root)) continue;
    let ticks = 0;
    const queue = [byPid.get(root)!];
    while (queue.length) {
      const s = queue.pop()!;
      ticks += s.cpuTicks;
      queue.push(...(children.get(s.pid) ?? []));
    }
    result[name] = ticks / CLOCK_TICKS_PER_SECOND;
  }
  return result;
}

/** Whole-machine CPU seconds (all cores, busy time) from /proc/stat. */
export async function machineBusySeconds(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / CLOCK_TICKS_PER_SECOND;
}

/** Resident memory now and its peak (VmHWM), in MiB. */
export async function memoryOf(pid: number): Promise<{ rssMiB: number; peakRssMiB: number } | undefined> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakRssMiB: kb('VmHWM') / 1024 };
}

/** Resets a process's peak RSS so VmHWM covers only what follows (Linux `clear_refs` value 5). */
export async function resetPeakRss(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => {});
}
