import { randomInt } from 'node:crypto';
import net from 'node:net';
import { InvalidInputError } from '../../errors.js';
import { AgentIsolationUnavailableError } from './errors.js';

/**
 * First uid (and gid) of the range per-run agent users are drawn from. systemd's table of uid
 * ranges leaves 1879048192-2147483647 unused (below it: users, DynamicUser and container ranges;
 * above 2^31 programs that treat uid_t as signed misbehave). (Default: 1,900,000,000)
 */
export const AGENT_UID_FIRST_DEFAULT = 1_900_000_000;
/** How many uids the range holds; a run takes a random free one. (Default: 65,536) */
export const AGENT_UID_COUNT_DEFAULT = 65_536;
/** Random picks tried before giving up on finding a free uid. */
const LEASE_TRIES = 64;

export interface AgentUidRange {
  first: number;
  count: number;
}

/** One run's uid (its gid is the same number), held until `release`. */
export interface AgentUidLease {
  uid: number;
  gid: number;
  release(): Promise<void>;
}

/**
 * Takes a uid no other run on this host holds. The lease is a Linux abstract Unix socket named
 * after the uid: binding it is exclusive host-wide (per network namespace), it needs no file,
 * and the kernel frees it when the worker dies, so a crashed worker never leaves a uid taken.
 * Numeric uids need no /etc/passwd entry: nothing is written outside the agent folder, and every
 * run gets a uid of its own, so two agents never share one (and with it each other's /proc).
 */
export async function leaseAgentUid(range: AgentUidRange): Promise<AgentUidLease> {
  for (let i = 0; i < LEASE_TRIES; i++) {
    const lease = await tryLeaseAgentUid(range.first + randomInt(range.count));
    if (lease) return lease;
  }
  throw new AgentIsolationUnavailableError(
    `no free agent uid in ${range.first}-${range.first + range.count - 1} after ${LEASE_TRIES} tries`,
  );
}

/** Leases exactly `uid` if no run on this host holds it, else undefined. */
export async function tryLeaseAgentUid(uid: number): Promise<AgentUidLease | undefined> {
  const server = await holdName(leaseName(uid));
  return server ? { uid, gid: uid, release: () => new Promise<void>((resolve) => server.close(() => resolve())) } : undefined;
}

const leaseName = (uid: number) => `\0baton-agent-uid-${uid}`;

function holdName(name: string): Promise<net.Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error)));
    server.listen({ path: name }, () => {
      // The lease must not keep a worker that is done from exiting.
      server.unref();
      resolve(server);
    });
  });
}

/** Parses `first-last` (inclusive), as in `BATON_AGENT_UIDS=1900000000-1900065535`. */
export function parseUidRange(text: string): AgentUidRange {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1_000 || last < first || last > 2 ** 31 - 2) {
    throw new InvalidInputError(`agent uid range '${text}' is not 'first-last' with 1000 <= first <= last < 2^31-1`);
  }
  return { first, count: last - first + 1 };
}
