import { randomBytes } from 'node:crypto';
import { chmod, copyFile, lchown, lstat, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { batonHome } from '../../config.js';
import { PACKAGE_ROOT, packageCodeDirs } from '../../packageRoot.js';
import { killAgentProcesses } from './isolateOwner.js';
import type { AgentIsolation } from './agentIsolation.js';
import { leaseAgentUid, tryLeaseAgentUid, type AgentUidLease } from './uids.js';
import { bubblewrapPrefix, type AgentNetwork, type SandboxFile, type SandboxMount } from './bubblewrap.js';
import { prlimitArgs } from './limits.js';
import { AgentIsolationUnavailableError } from './errors.js';
import type { Confinement } from './confinement.js';
import { SLIRP_NAMESERVER } from './sandboxNetwork.js';

/** World-writable folders swept of a per-run user's files when its run ends (no sandbox to keep them private). */
const SHARED_TEMP_DIRS = ['/tmp', '/var/tmp', '/dev/shm'];
/** Shared temp folders a sandboxed agent gets empty, private and writable. */
const SANDBOX_SCRATCH_DIRS = ['/tmp', '/var/tmp'];
/** Folders hidden from every sandboxed agent, besides baton's own and the worker's home (sockets of system services). */
const SANDBOX_HIDDEN_DIRS = ['/run'];
/** The name an agent sees for itself (numeric uids have no /etc/passwd entry). */
const AGENT_USER_NAME = 'baton-agent';

/**
 * One isolated run's folder under the agent root, `<root>/<uid>-<random>`: the checkout, the
 * agent's HOME and TMPDIR, and what the runner puts there for it (the `baton` shim, the tool
 * endpoint's socket). Mode 0700, owned by the run's uid once handed over; the root is 0711, so
 * other runs can neither list it nor enter their neighbours' folders.
 */
export interface AgentWorkspace {
  dir: string;
  /** Where the clone goes and the command runs. */
  checkout: string;
  /** The run's own user, when agents run as per-run users. */
  user?: { uid: number; gid: number };
  /** How the command is started: as `user`, in the sandbox, with no_new_privs. */
  confinement: Confinement;
  /** The same confinement with no network, for what the worker runs in the folder as the agent (git). */
  offline: Confinement;
  /** The agent's environment: `base` with its own HOME, TMPDIR and user name, and nothing naming the worker's folders. */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Gives the folder to the run's user; objects the clone shares with the repository (hard links) stay read-only. */
  handOver(): Promise<void>;
  /** Kills whatever the run's user still runs, removes the folder (and its files in shared temp folders) and frees the uid. */
  close(): Promise<void>;
}

/**
 * Opens a workspace for one isolated run. `hide` names further folders a sandboxed command must
 * not see (the worker's work folder, the repository it was cloned from).
 */
export async function openAgentWorkspace(isolation: AgentIsolation, hide: string[]): Promise<AgentWorkspace> {
  await ensureAgentRoot(isolation);
  if (isolation.user === 'per-run') await clearDeadRuns(isolation);
  const lease = isolation.user === 'per-run' ? await leaseAgentUid(isolation.uids) : undefined;
  const dir = path.join(isolation.root, `${lease?.uid ?? 'run'}-${randomBytes(8).toString('hex')}`);
  try {
    const user = lease ? { uid: lease.uid, gid: lease.gid } : undefined;
    if (lease) await clearLeftovers(isolation, lease);
    const checkout = path.join(dir, 'work');
    const home = path.join(dir, 'home');
    const tmp = path.join(dir, 'tmp');
    await mkdir(dir, { mode: 0o700 });
    await mkdir(home, { mode: 0o700 });
    await mkdir(tmp, { mode: 0o700 });
    // The worker's resolver may be on its loopback, which an `outside` sandbox cannot reach: it asks slirp4netns's.
    const files: SandboxFile[] = [];
    if (isolation.network === 'outside') {
      files.push({ source: path.join(dir, 'resolv.conf'), at: '/etc/resolv.conf' });
      await writeFile(files[0]!.source, `nameserver ${SLIRP_NAMESERVER}\n`, { mode: 0o644 });
    }
    const mounts = isolation.bubblewrap ? await sandboxMounts(isolation, dir, hide) : [];
    const confine = (network: AgentNetwork): Confinement => ({
      ...(user ? { user } : {}),
      ...(network === 'outside' && isolation.slirp4netns ? { slirp4netns: isolation.slirp4netns } : {}),
      prefix: [
        // S6: every process of the run inherits the limits; the sandbox starts inside them.
        ...(isolation.prlimit ? prlimitArgs(isolation.prlimit, isolation.limits, user !== undefined) : []),
        ...(isolation.bubblewrap
          ? bubblewrapPrefix(isolation.bubblewrap, { network, cwd: checkout, mounts, files, scratchBytes: isolation.limits.scratchBytes })
          : isolation.setpriv
            ? [isolation.setpriv, '--no-new-privs', '--']
            : []),
      ],
    });
    return {
      dir,
      checkout,
      ...(user ? { user } : {}),
      confinement: confine(isolation.network),
      // The worker's own git steps in the folder need no network: no slirp4netns for them.
      offline: confine(isolation.bubblewrap ? 'none' : isolation.network),
      env: (base) => {
        const env: NodeJS.ProcessEnv = {};
        // XDG_* and npm_config_* name the worker's own folders, which the agent cannot (and must not) use.
        for (const [name, value] of Object.entries(base)) if (!/^(XDG_|npm_config_|npm_package_)/.test(name)) env[name] = value;
        return { ...env, HOME: home, TMPDIR: tmp, TMP: tmp, TEMP: tmp, USER: AGENT_USER_NAME, LOGNAME: AGENT_USER_NAME };
      },
      handOver: async () => {
        if (user) await chownTree(dir, user);
      },
      close: async () => {
        if (user) await killAgentProcesses({ user });
        await rm(dir, { recursive: true, force: true });
        if (lease && !isolation.bubblewrap) await sweepSharedTemp(lease.uid);
        await lease?.release();
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    await lease?.release();
    throw error;
  }
}

const preparedRoots = new Map<string, Promise<void>>();

/**
 * Creates the agent root once per process: a real folder (not a link) owned by the worker, mode
 * 0711 for per-run users (they pass through it to their own folder, and cannot list it), else
 * 0700. A root another user owns (someone got there first in /tmp) is refused.
 */
function ensureAgentRoot(isolation: AgentIsolation): Promise<void> {
  let prepared = preparedRoots.get(isolation.root);
  if (!prepared) {
    prepared = prepareAgentRoot(isolation);
    prepared.catch(() => preparedRoots.delete(isolation.root));
    preparedRoots.set(isolation.root, prepared);
  }
  return prepared;
}

async function prepareAgentRoot(isolation: AgentIsolation): Promise<void> {
  const root = isolation.root;
  await mkdir(root, { recursive: true, mode: 0o700 });
  const info = await lstat(root);
  if (!info.isDirectory() || info.uid !== process.geteuid?.()) {
    throw new AgentIsolationUnavailableError(
      `agent folder ${root} is ${info.isDirectory() ? `owned by uid ${info.uid}` : 'not a folder'}; choose another (BATON_AGENT_ROOT)`,
    );
  }
  await chmod(root, isolation.user === 'per-run' ? 0o711 : 0o700);
  if (isolation.user !== 'per-run') return;
  const parts = path.resolve(root).split(path.sep);
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join(path.sep) || path.sep;
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new AgentIsolationUnavailableError(
        `agents cannot reach their folders under ${root}: ${dir} is not searchable by other users; choose another (BATON_AGENT_ROOT)`,
      );
    }
  }
}

/**
 * Folders of runs whose worker died (the kernel freed their uid lease with it), with whatever their
 * agents still run. Taking the lease first makes sure no run starting meanwhile, in this worker or
 * another, is mistaken for a leftover; a live run's lease is held, so it is skipped.
 */
async function clearDeadRuns(isolation: AgentIsolation): Promise<void> {
  const inRange = (uid: number) =>
    Number.isSafeInteger(uid) && uid >= isolation.uids.first && uid < isolation.uids.first + isolation.uids.count;
  for (const uid of new Set((await readdir(isolation.root)).map((entry) => Number(/^(\d+)-/.exec(entry)?.[1])).filter(inRange))) {
    const lease = await tryLeaseAgentUid(uid);
    if (!lease) continue;
    try {
      await clearLeftovers(isolation, lease);
    } finally {
      await lease.release();
    }
  }
}

/**
 * A uid just leased may have been a crashed worker's: its agent may still run, and its folder may
 * still exist. Both go before the uid is used again.
 */
async function clearLeftovers(isolation: AgentIsolation, lease: AgentUidLease): Promise<void> {
  await killAgentProcesses({ user: lease });
  for (const entry of await readdir(isolation.root)) {
    if (entry.startsWith(`${lease.uid}-`)) await rm(path.join(isolation.root, entry), { recursive: true, force: true });
  }
  if (!isolation.bubblewrap) await sweepSharedTemp(lease.uid);
}

/**
 * lchown's everything under `dir` to `user`. A file the clone shares with the repository by hard
 * link stays the repository owner's (changing it would change the repository's copy) and keeps
 * its read-only mode; one that other users cannot read is replaced by a copy the agent owns.
 */
async function chownTree(dir: string, user: { uid: number; gid: number }): Promise<void> {
  const walk = async (current: string): Promise<void> => {
    const info = await lstat(current);
    if (info.isFile() && info.nlink > 1) {
      if ((info.mode & 0o004) !== 0) return;
      const copy = `${current}.baton-copy`;
      await copyFile(current, copy);
      await rename(copy, current);
    }
    await lchown(current, user.uid, user.gid);
    if (info.isDirectory()) await Promise.all((await readdir(current)).map((entry) => walk(path.join(current, entry))));
  };
  await walk(dir);
}

/** Removes what a per-run user left at the top of the world-writable temp folders. */
async function sweepSharedTemp(uid: number): Promise<void> {
  for (const dir of SHARED_TEMP_DIRS) {
    const entries = await readdir(dir).catch(() => [] as string[]);
    for (const entry of entries) {
      const file = path.join(dir, entry);
      const info = await lstat(file).catch(() => undefined);
      if (info?.uid === uid) await rm(file, { recursive: true, force: true });
    }
  }
}

/**
 * The sandbox's view: baton's folders, the worker's home, the repository and /run hidden; /tmp and
 * /var/tmp private; the run's folder writable; all else read-only.
 */
async function sandboxMounts(isolation: AgentIsolation, dir: string, hide: string[]): Promise<SandboxMount[]> {
  const existing = async (dirs: string[]) => {
    const found: string[] = [];
    for (const d of dirs)
      if (
        await stat(d).then(
          (s) => s.isDirectory(),
          () => false,
        )
      )
        found.push(path.resolve(d));
    return found;
  };
  const hidden = await existing([...SANDBOX_HIDDEN_DIRS, homedir(), batonHome(), isolation.root, ...hide]);
  const scratch = await existing(SANDBOX_SCRATCH_DIRS);
  const inside = (child: string, parent: string) => child === parent || child.startsWith(`${parent}${path.sep}`);
  // baton and Node are shown again where a hidden folder holds them (say, an install under $HOME).
  // Sandboxed agents see this installation of baton (read-only) so `baton tool call` works.
  const exposed = [...packageCodeDirs(), path.dirname(path.dirname(process.execPath))]
    .map((p) => path.resolve(p))
    .filter((p) => [...hidden, ...scratch].some((h) => inside(p, h)));
  // baton's own state beside its code (the default home `.baton`, CI's database URL, the tests'
  // stacks): hidden last, so showing baton's code again does not show it.
  const state = await existing([path.join(PACKAGE_ROOT, '.baton')]);
  return [
    ...scratch.map((d) => ({ scratch: d })),
    ...hidden.map((d) => ({ hide: d })),
    ...exposed.map((d) => ({ expose: d })),
    ...state.map((d) => ({ hide: d })),
    { writable: dir },
  ];
}
