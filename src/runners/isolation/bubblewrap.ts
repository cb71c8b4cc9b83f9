import { execFile } from 'node:child_process';
import path from 'node:path';
import { readEnv } from '../../config.js';
import { findProgram } from '../../dev/run.js';
import { SANDBOX_BLOCK_FD, SANDBOX_INFO_FD, spawnWithOutsideNetwork } from './sandboxNetwork.js';

/** Environment variable naming the `bwrap` binary to use instead of the one on PATH. */
const BWRAP_PATH_ENV = 'BATON_BWRAP_PATH';
/** Environment variable naming the `slirp4netns` binary to use instead of the one on PATH. */
const SLIRP4NETNS_PATH_ENV = 'BATON_SLIRP4NETNS_PATH';
/** How long the start-up probe of bubblewrap may take. (Default: 10s) */
const PROBE_TIMEOUT_MS = 10_000;

/** A bubblewrap that was seen to start a sandbox for a given user. */
export interface Bubblewrap {
  path: string;
  /** `--disable-userns` (bubblewrap 0.8+): the agent cannot make user namespaces of its own. */
  disableUserns: boolean;
  /** `--size` (bubblewrap 0.7+): the sandbox's in-memory folders can be bounded. */
  sizeOption: boolean;
}

/**
 * `host`: the worker's own network, its 127.0.0.1 included; `outside`: a network namespace of its
 * own with a route out through slirp4netns and nothing of the worker's loopback; `none`: a
 * namespace with nothing in it but its own loopback.
 */
export type AgentNetwork = 'host' | 'outside' | 'none';

/**
 * One folder of the sandbox's file system view: `hide` shows it empty and read-only, `scratch`
 * empty and writable (private to the sandbox, gone with it), `expose` as it is but read-only
 * (inside a hidden folder), `writable` as it is and writable.
 */
export type SandboxMount = { hide: string } | { scratch: string } | { expose: string } | { writable: string };

/** A file shown read-only in place of another (say, the resolver configuration of an `outside` sandbox). */
export interface SandboxFile {
  source: string;
  at: string;
}

/** Finds `bwrap` on PATH (or `$BATON_BWRAP_PATH`); undefined when there is none. */
export function findBubblewrap(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const configured = readEnv(BWRAP_PATH_ENV, env);
  return configured ? Promise.resolve(configured) : findProgram('bwrap', env);
}

/** Finds `slirp4netns` on PATH (or `$BATON_SLIRP4NETNS_PATH`); undefined when there is none. */
export function findSlirp4netns(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const configured = readEnv(SLIRP4NETNS_PATH_ENV, env);
  return configured ? Promise.resolve(configured) : findProgram('slirp4netns', env);
}

/**
 * Starts `true` in the sandbox agents get (user, pid, ipc, uts and network namespaces) as `user`
 * (the worker's own when omitted), which is the only reliable test: unprivileged user namespaces
 * may be switched off by the kernel, a sysctl or an LSM. Throws with bubblewrap's own message.
 */
export async function probeBubblewrap(bwrap: string, user?: { uid: number; gid: number }): Promise<Bubblewrap> {
  const help = await execText(bwrap, ['--help'], user).catch(() => '');
  const found: Bubblewrap = { path: bwrap, disableUserns: help.includes('--disable-userns'), sizeOption: help.includes('--size') };
  await execText(bwrap, [...sandboxArgs(found, 'none'), ...PROBE_VIEW, 'true'], user);
  return found;
}

/** Starts `true` in an `outside` sandbox with slirp4netns attached, as an agent's would be. Throws with what failed. */
export async function probeOutsideNetwork(bwrap: Bubblewrap, slirp4netns: string, user?: { uid: number; gid: number }): Promise<void> {
  const argv = [bwrap.path, ...sandboxArgs(bwrap, 'outside'), ...PROBE_VIEW, ...outsideNetworkArgs(), 'true'];
  const child = spawnWithOutsideNetwork(slirp4netns, argv, {
    cwd: '/',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'] as ['ignore', 'ignore', 'pipe'],
    ...user,
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap failed: ${stderr.trim() || `exit ${code}`}`))));
  });
}

const PROBE_VIEW = ['--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev'];

/** Where bubblewrap reports the sandbox's pid and waits for its network (sandboxNetwork.ts). */
const outsideNetworkArgs = () => ['--info-fd', String(SANDBOX_INFO_FD), '--block-fd', String(SANDBOX_BLOCK_FD)];

/**
 * The `bwrap ... --` prefix that runs a command with a private /proc (pid namespace: no other
 * process is visible) and /dev, the file system read-only but for `mounts`, and with
 * `network: 'none'` no network at all (an empty loopback of its own), with `outside` a namespace
 * of its own that waits for slirp4netns (spawnWithOutsideNetwork). The sandbox dies with the
 * process that started it.
 */
export function bubblewrapPrefix(
  bwrap: Bubblewrap,
  options: {
    network: AgentNetwork;
    cwd: string;
    mounts: SandboxMount[];
    files?: SandboxFile[];
    /** Size of each in-memory folder. (Default: the kernel's, half the memory) */ scratchBytes?: number;
  },
): string[] {
  // In-memory folders are bounded where bubblewrap can: an agent must not fill the worker's memory
  // through its /tmp or /dev/shm.
  const size = options.scratchBytes && bwrap.sizeOption ? ['--size', String(options.scratchBytes)] : [];
  const args = [
    bwrap.path,
    ...sandboxArgs(bwrap, options.network),
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    ...size,
    '--tmpfs',
    '/dev/shm',
    '--proc',
    '/proc',
  ];
  const mounts = options.mounts.map((m) => ({
    kind: Object.keys(m)[0] as 'hide' | 'scratch' | 'expose' | 'writable',
    dir: path.resolve(Object.values(m)[0] as string),
  }));
  const inside = (child: string, parent: string) =>
    child !== parent && child.startsWith(parent === path.sep ? parent : `${parent}${path.sep}`);
  const depth = (dir: string) => dir.split(path.sep).length;
  // A folder inside an empty one is already out of sight; hiding it again would only leave its
  // mount point to be listed. Exposed and writable folders are mounted wherever they are.
  const needed = mounts.filter((m, i) => {
    if (m.dir === path.sep || mounts.findIndex((o) => o.kind === m.kind && o.dir === m.dir) !== i) return false;
    if (m.kind !== 'hide' && m.kind !== 'scratch') return true;
    const enclosing = mounts.filter((o) => inside(m.dir, o.dir)).sort((a, b) => depth(b.dir) - depth(a.dir))[0];
    return !enclosing || enclosing.kind === 'expose' || enclosing.kind === 'writable';
  });
  // Parents before children, so each folder ends up as asked whatever holds it.
  const order = { hide: 0, scratch: 0, expose: 1, writable: 2 };
  needed.sort((a, b) => depth(a.dir) - depth(b.dir) || order[a.kind] - order[b.kind]);
  for (const { kind, dir } of needed) {
    if (kind === 'hide' || kind === 'scratch') args.push(...size, '--tmpfs', dir);
    else if (kind === 'expose') args.push('--ro-bind-try', dir, dir);
    else args.push('--bind', dir, dir);
  }
  for (const file of options.files ?? []) args.push('--ro-bind', file.source, file.at);
  // Last, once every mount point inside them exists: hidden folders take no writes either.
  for (const { kind, dir } of needed) if (kind === 'hide') args.push('--remount-ro', dir);
  if (options.network === 'outside') args.push(...outsideNetworkArgs());
  args.push('--chdir', options.cwd, '--');
  return args;
}

function sandboxArgs(bwrap: Bubblewrap, network: AgentNetwork): string[] {
  return [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(network === 'host' ? [] : ['--unshare-net']),
    ...(bwrap.disableUserns ? ['--disable-userns'] : []),
    // No controlling terminal to push input into (CVE-2017-5226), and nothing outlives the worker.
    '--new-session',
    '--die-with-parent',
  ];
}

function execText(file: string, args: string[], user?: { uid: number; gid: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { timeout: PROBE_TIMEOUT_MS, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, cwd: '/', ...user },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${path.basename(file)} failed: ${String(stderr).trim() || error.message}`));
        else resolve(`${stdout}${stderr}`);
      },
    );
  });
}
