// S6: what one isolated run may use of its worker's machine. Resource limits (setrlimit, through
// util-linux's prlimit) that every process of the run inherits, a size for the sandbox's in-memory
// folders, and a bound on connections to its agent API endpoint. Limits are per process except
// processes (per run: each run has a uid of its own); docs/isolation.md says what is not bounded.
import { readEnv } from '../../config.js';
import { InvalidInputError } from '../../errors.js';

export interface AgentLimits {
  /** Processes the run's uid may have at once (RLIMIT_NPROC); applied with per-run users only. (Default: 1,024) */
  processes: number;
  /** Data memory of one process, in bytes (RLIMIT_DATA). (Default: 8 GiB) */
  memoryBytes: number;
  /** Largest file one process may write, in bytes (RLIMIT_FSIZE). (Default: 8 GiB) */
  fileBytes: number;
  /** Open files of one process (RLIMIT_NOFILE). (Default: 4,096) */
  openFiles: number;
  /** Size of each of the sandbox's in-memory folders (its /tmp, /var/tmp, /dev/shm, and the empty ones that hide folders), in bytes; needs bubblewrap 0.7+. (Default: 1 GiB) */
  scratchBytes: number;
  /** Connections open at once to the run's agent API endpoint. (Default: 64) */
  connections: number;
}

const GIB = 1024 ** 3;
export const AGENT_LIMITS_DEFAULT: Readonly<AgentLimits> = {
  processes: 1_024,
  memoryBytes: 8 * GIB,
  fileBytes: 8 * GIB,
  openFiles: 4_096,
  scratchBytes: GIB,
  connections: 64,
};

/** `processes=512,memory=4G,file=2G,files=1024,scratch=256M,connections=16`: any of them, in any order. */
const AGENT_LIMITS_ENV = 'BATON_AGENT_LIMITS';
const NAMES: Record<string, keyof AgentLimits> = {
  processes: 'processes',
  memory: 'memoryBytes',
  file: 'fileBytes',
  files: 'openFiles',
  scratch: 'scratchBytes',
  connections: 'connections',
};
const SIZED = new Set<keyof AgentLimits>(['memoryBytes', 'fileBytes', 'scratchBytes']);
const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: GIB, T: 1024 * GIB };

/** The limits `BATON_AGENT_LIMITS` sets; a clear error names what it cannot read. */
export function agentLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<AgentLimits> {
  const text = readEnv(AGENT_LIMITS_ENV, env);
  if (text === undefined) return {};
  const limits: Partial<AgentLimits> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([a-z]+)=(\d+)([KMGT]?)$/i.exec(part);
    const field = match && NAMES[match[1]!.toLowerCase()];
    const unit = match?.[3]?.toUpperCase() ?? '';
    if (!match || !field || (unit && !SIZED.has(field))) {
      throw new InvalidInputError(
        `${AGENT_LIMITS_ENV}: cannot read ${JSON.stringify(part)}; expected name=number with names ${Object.keys(NAMES).join(', ')} (memory, file and scratch may end in K, M, G or T)`,
      );
    }
    const value = Number(match[2]) * UNITS[unit]!;
    if (!Number.isSafeInteger(value) || value < 1)
      throw new InvalidInputError(`${AGENT_LIMITS_ENV}: ${part} must be a positive whole number`);
    limits[field] = value;
  }
  return limits;
}

/** The prlimit words that put `limits` on a command and everything it starts. */
export function prlimitArgs(prlimit: string, limits: AgentLimits, perRunUser: boolean): string[] {
  return [
    prlimit,
    // A soft and a hard limit alike, so the agent cannot raise them.
    ...(perRunUser ? [`--nproc=${limits.processes}`] : []),
    `--data=${limits.memoryBytes}`,
    `--fsize=${limits.fileBytes}`,
    `--nofile=${limits.openFiles}`,
    '--',
  ];
}
