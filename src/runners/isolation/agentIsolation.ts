// S2, S4: how command agents and verification commands are kept apart from the worker and from
// each other. docs/isolation.md says what each mode stops and what an agent can still do.
import { stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { readEnv } from '../../config.js';
import { InvalidInputError } from '../../errors.js';
import { AGENT_UID_COUNT_DEFAULT, AGENT_UID_FIRST_DEFAULT, leaseAgentUid, parseUidRange, type AgentUidRange } from './uids.js';
import { BATON_BIN } from '../../packageRoot.js';
import { findBubblewrap, findSlirp4netns, probeBubblewrap, probeOutsideNetwork, type AgentNetwork, type Bubblewrap } from './bubblewrap.js';
import { AgentIsolationUnavailableError } from './errors.js';
import { findProgram } from '../../dev/run.js';
import { AGENT_LIMITS_DEFAULT, agentLimitsFromEnv, type AgentLimits } from './limits.js';

/** `per-run`: a fresh unprivileged uid and gid for every run (needs a root worker); `worker`: the worker's own user. */
type AgentUser = 'per-run' | 'worker';
/** `bubblewrap`: Linux namespaces (private /proc, only the run's folder writable); `none`: a plain process. */
type AgentSandbox = 'bubblewrap' | 'none';

/** Environment variables read by `agentIsolationFromEnv` (and so by `baton worker` and `baton dev`). */
const AGENT_USER_ENV = 'BATON_AGENT_USER';
const AGENT_SANDBOX_ENV = 'BATON_AGENT_SANDBOX';
const AGENT_NETWORK_ENV = 'BATON_AGENT_NETWORK';
/** `first-last`, inclusive. */
const AGENT_UIDS_ENV = 'BATON_AGENT_UIDS';
const AGENT_ROOT_ENV = 'BATON_AGENT_ROOT';

export interface AgentIsolationOptions {
  /** Who agents run as. (Default: `per-run` when the worker runs as root, else `worker`) */
  user?: AgentUser;
  /**
   * Whether agents run in a bubblewrap sandbox. (Default: `bubblewrap` when `network` is not
   * `host`, or when bubblewrap works here; else `none`)
   */
  sandbox?: AgentSandbox;
  /**
   * `outside`: a route out through slirp4netns, nothing on the worker's 127.0.0.1 (needs the
   * sandbox, slirp4netns and a root worker); `none`: no network but the baton tool endpoint (needs
   * the sandbox); `host`: the worker's network. (Default: `outside` where it works, else `host`)
   */
  network?: AgentNetwork;
  /** Where per-run uids are drawn from. (Default: 1,900,000,000-1,900,065,535) */
  uids?: AgentUidRange;
  /** Folder of the per-run clones, outside the baton home. (Default: `<tmpdir>/baton-agents-<worker uid>`) */
  root?: string;
  /** S6: what one isolated run may use (limits.ts). (Default: AGENT_LIMITS_DEFAULT, each field on its own) */
  limits?: Partial<AgentLimits>;
}

/** Isolation as resolved on this host: what every isolated run and verification gets. */
export interface AgentIsolation {
  user: AgentUser;
  sandbox: AgentSandbox;
  network: AgentNetwork;
  uids: AgentUidRange;
  root: string;
  /** Set when `sandbox` is `bubblewrap`. */
  bubblewrap?: Bubblewrap;
  /** Set when `network` is `outside`: what gives each sandbox its route out. */
  slirp4netns?: string;
  /** `setpriv`, when installed: per-run agents start with no_new_privs, so setuid programs gain them nothing. */
  setpriv?: string;
  /** What one isolated run may use. */
  limits: AgentLimits;
  /** util-linux's `prlimit`, which puts `limits` on every isolated command; without it only the sandbox's folders and the endpoint are bounded. */
  prlimit?: string;
  /** False when agents run as the worker's user with no sandbox: nothing separates them from it. */
  isolated: boolean;
}

/** What `baton doctor` reports about agent isolation on this host. */
export interface AgentIsolationStatus {
  isolated: boolean;
  /** One line: how agents run here. */
  summary: string;
  workerIsRoot: boolean;
  user?: AgentUser;
  sandbox?: AgentSandbox;
  network?: AgentNetwork;
  /** The bubblewrap that was probed, if any. */
  bubblewrap?: string;
  /** Each way an agent is less isolated than asked or than this host allows; empty when none. */
  findings: string[];
}

const workerIsRoot = () => process.geteuid?.() === 0;

/** The isolation options of `BATON_AGENT_USER`, `_SANDBOX`, `_NETWORK`, `_UIDS`, `_ROOT` and `_LIMITS`; unset ones are left to the defaults. */
export function agentIsolationFromEnv(env: NodeJS.ProcessEnv = process.env): AgentIsolationOptions {
  const oneOf = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
    const value = readEnv(name, env);
    if (value !== undefined && !allowed.includes(value as T))
      throw new InvalidInputError(`${name}=${value}: expected one of ${allowed.join(', ')}`);
    return value as T | undefined;
  };
  const uids = readEnv(AGENT_UIDS_ENV, env);
  const root = readEnv(AGENT_ROOT_ENV, env);
  return {
    user: oneOf<AgentUser>(AGENT_USER_ENV, ['per-run', 'worker']),
    sandbox: oneOf<AgentSandbox>(AGENT_SANDBOX_ENV, ['bubblewrap', 'none']),
    network: oneOf<AgentNetwork>(AGENT_NETWORK_ENV, ['host', 'outside', 'none']),
    ...(uids ? { uids: parseUidRange(uids) } : {}),
    ...(root ? { root: path.resolve(root) } : {}),
    limits: agentLimitsFromEnv(env),
  };
}

/**
 * Resolves `options` on this host, probing bubblewrap by starting a sandbox as an agent would.
 * Throws AgentIsolationUnavailableError when something asked for explicitly (per-run users, the
 * sandbox, no network) cannot be had; isolation that is merely unavailable by default resolves
 * with `isolated: false`, which the worker reports loudly.
 */
export async function resolveAgentIsolation(options: AgentIsolationOptions = {}): Promise<AgentIsolation> {
  const root = workerIsRoot();
  const user = options.user ?? (root ? 'per-run' : 'worker');
  if (user === 'per-run' && !root) {
    throw new AgentIsolationUnavailableError(
      `per-run agent users need a worker running as root (this one runs as uid ${process.geteuid?.()})`,
    );
  }
  if (options.network === 'outside' && !root) {
    throw new AgentIsolationUnavailableError(
      `network 'outside' needs a worker running as root (slirp4netns must enter the sandbox's namespace); use 'none' or 'host'`,
    );
  }
  const uids = options.uids ?? { first: AGENT_UID_FIRST_DEFAULT, count: AGENT_UID_COUNT_DEFAULT };
  // Probes run as an agent would: under a per-run uid (leased, so no run's clean-up meets the probe).
  const asAgent = async <T>(probe: (agent?: { uid: number; gid: number }) => Promise<T>): Promise<T> => {
    const lease = user === 'per-run' ? await leaseAgentUid(uids) : undefined;
    try {
      return await probe(lease && { uid: lease.uid, gid: lease.gid });
    } finally {
      await lease?.release();
    }
  };
  let bubblewrap: Bubblewrap | undefined;
  let missing = '';
  if (options.sandbox !== 'none') {
    try {
      const found = await findBubblewrap();
      if (!found) throw new Error('bwrap is not on PATH (Debian: apt-get install bubblewrap)');
      bubblewrap = await asAgent((agent) => probeBubblewrap(found, agent));
    } catch (error) {
      missing = (error as Error).message;
    }
  }
  const sandbox = options.sandbox ?? (bubblewrap ? 'bubblewrap' : 'none');
  if (sandbox === 'bubblewrap' && !bubblewrap)
    throw new AgentIsolationUnavailableError(`the bubblewrap sandbox does not work here: ${missing}`);
  if (options.network && options.network !== 'host' && !bubblewrap) {
    throw new AgentIsolationUnavailableError(`network '${options.network}' needs the bubblewrap sandbox${missing ? `: ${missing}` : ''}`);
  }
  let slirp4netns: string | undefined;
  if (bubblewrap && root && (options.network === 'outside' || options.network === undefined)) {
    try {
      const found = await findSlirp4netns();
      if (!found) throw new Error('slirp4netns is not on PATH (Debian: apt-get install slirp4netns)');
      await asAgent((agent) => probeOutsideNetwork(bubblewrap, found, agent));
      slirp4netns = found;
    } catch (error) {
      if (options.network === 'outside')
        throw new AgentIsolationUnavailableError(`network 'outside' does not work here: ${(error as Error).message}`);
    }
  }
  const network = options.network ?? (slirp4netns ? 'outside' : 'host');
  const setpriv = user === 'per-run' ? await findProgram('setpriv') : undefined;
  const prlimit = await findProgram('prlimit');
  return {
    user,
    sandbox,
    network,
    uids,
    // One root per way of running: a worker-user root is 0700, a per-run root 0711, and one folder cannot be both.
    root:
      options.root ?? path.join(tmpdir(), `baton-agents-${process.geteuid?.() ?? userInfo().uid}${user === 'per-run' ? '' : '-worker'}`),
    ...(bubblewrap ? { bubblewrap } : {}),
    ...(slirp4netns ? { slirp4netns } : {}),
    ...(setpriv ? { setpriv } : {}),
    limits: { ...AGENT_LIMITS_DEFAULT, ...options.limits },
    ...(prlimit ? { prlimit } : {}),
    isolated: user === 'per-run' || sandbox === 'bubblewrap',
  };
}

/**
 * S5: whether command agents started by a worker with `options` would be isolated on this host,
 * and if not, why. Never throws: what cannot be had is a finding. `baton doctor` reports it.
 */
export async function agentIsolationStatus(options: AgentIsolationOptions = agentIsolationFromEnv()): Promise<AgentIsolationStatus> {
  try {
    return await describeAgentIsolation(await resolveAgentIsolation(options));
  } catch (error) {
    const message = (error as Error).message;
    return { workerIsRoot: workerIsRoot(), isolated: false, summary: message, findings: [message] };
  }
}

/** The status of isolation already resolved (a worker's, at start). */
export async function describeAgentIsolation(isolation: AgentIsolation): Promise<AgentIsolationStatus> {
  const findings: string[] = [];
  if (isolation.isolated && !isolation.prlimit) {
    findings.push(
      'prlimit is not on PATH: isolated runs have no bound on processes, memory, file size or open files (Debian: apt-get install util-linux)',
    );
  }
  if (!isolation.isolated) {
    findings.push(
      `command agents run as the worker's own OS user (${userInfo().username}) with no sandbox: an agent can read the worker's ` +
        "environment through /proc, the baton home, other runs' worktrees and their tool tokens. Run the worker as root " +
        '(per-run agent users) or install bubblewrap (Debian: apt-get install bubblewrap).',
    );
  } else if (isolation.user === 'per-run') {
    // Agents run baton's own CLI (`baton tool call`) with this Node: both must be readable by their uids.
    for (const file of [process.execPath, BATON_BIN]) {
      if (!(await readableByOthers(file)))
        findings.push(`${file} is not readable by other users: isolated agents cannot run \`baton tool call\``);
    }
  }
  const uidRange = `${isolation.uids.first}-${isolation.uids.first + isolation.uids.count - 1}`;
  return {
    workerIsRoot: workerIsRoot(),
    isolated: isolation.isolated,
    user: isolation.user,
    sandbox: isolation.sandbox,
    network: isolation.network,
    ...(isolation.bubblewrap ? { bubblewrap: isolation.bubblewrap.path } : {}),
    summary: isolation.isolated
      ? `agents run ${isolation.user === 'per-run' ? `as a per-run uid from ${uidRange}` : "as the worker's user"}, ` +
        `${isolation.sandbox === 'bubblewrap' ? 'in a bubblewrap sandbox' : 'with no sandbox'}, ` +
        `${NETWORK_SUMMARY[isolation.network]}, in clones under ${isolation.root}`
      : 'agents are NOT isolated from the worker',
    findings,
  };
}

const NETWORK_SUMMARY: Record<AgentNetwork, string> = {
  host: "with the worker's network",
  outside: "with outside network only (not the worker's 127.0.0.1)",
  none: 'with no network but the tool endpoint',
};

/** The loud start-up warning of a worker whose agents are not (fully) isolated; undefined when there is nothing to warn of. */
export function isolationWarning(status: AgentIsolationStatus): string | undefined {
  if (status.isolated && !status.findings.length) return undefined;
  const bar = '!'.repeat(100);
  return [bar, `!! WARNING: ${status.summary}.`, ...status.findings.map((f) => `!! ${f}`), bar].join('\n');
}

/** Whether a user other than the file's owner can open `file`: o+x on every parent, o+r on it. */
async function readableByOthers(file: string): Promise<boolean> {
  try {
    const parts = path.resolve(file).split(path.sep);
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join(path.sep) || path.sep;
      if (((await stat(dir)).mode & 0o001) === 0) return false;
    }
    return ((await stat(file)).mode & 0o004) !== 0;
  } catch {
    return false;
  }
}
