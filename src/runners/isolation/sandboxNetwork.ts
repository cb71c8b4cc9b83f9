// S2: the `outside` agent network. The sandbox gets a network namespace of its own, and
// slirp4netns (user-mode networking, Debian: apt-get install slirp4netns) gives it a route out
// through the worker's sockets, with `--disable-host-loopback`: nothing listening on the
// worker's 127.0.0.1 (Postgres, the Temporal dev server, baton's own ports) can be reached.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { killAgentProcesses } from './isolateOwner.js';
import { AgentIsolationUnavailableError } from './errors.js';

/**
 * The descriptors bubblewrap is given for an `outside` sandbox: it writes the sandbox's pid to
 * the first (`--info-fd`) and waits on the second (`--block-fd`) before it starts the command, so
 * the command never runs before its network is there.
 */
export const SANDBOX_INFO_FD = 3;
export const SANDBOX_BLOCK_FD = 4;
/** The resolver slirp4netns answers on inside the namespace (it forwards to the worker's). */
export const SLIRP_NAMESERVER = '10.0.2.3';
/** How long slirp4netns may take to bring the namespace's interface up. */
const NETWORK_READY_TIMEOUT_MS = 10_000;

/**
 * Spawns `argv` (a bubblewrap command line made for the `outside` network) and, once bubblewrap
 * has made the sandbox, attaches slirp4netns to its network namespace and lets the command start.
 * When the network cannot be attached, the sandbox is killed before its command runs and the
 * child emits `error`. slirp4netns ends with the sandbox, and with the worker (it watches a socket
 * only the worker holds).
 */
export function spawnWithOutsideNetwork(
  slirp4netns: string,
  argv: string[],
  options: SpawnOptions & { stdio: ['ignore', 'pipe' | 'ignore' | number, 'pipe'] },
): ChildProcess {
  const [file, ...args] = argv;
  const child = spawn(file!, args, { ...options, stdio: [...options.stdio, 'pipe', 'pipe'] } as SpawnOptions);
  const info = child.stdio[SANDBOX_INFO_FD] as NodeJS.ReadableStream;
  const block = child.stdio[SANDBOX_BLOCK_FD] as NodeJS.WritableStream;
  let slirp: ChildProcess | undefined;
  let failed = false;
  const fail = (reason: string) => {
    // Once: a second 'error' would find no listener and throw in the worker.
    if (failed) return;
    failed = true;
    clearTimeout(timer);
    void killAgentProcesses({ pgid: child.pid });
    slirp?.kill('SIGKILL');
    child.emit('error', new AgentIsolationUnavailableError(`the agent's outside network could not be set up: ${reason}`));
  };
  const timer = setTimeout(() => fail(`slirp4netns was not ready after ${NETWORK_READY_TIMEOUT_MS} ms`), NETWORK_READY_TIMEOUT_MS);
  const attach = async (pid: string) => {
    // bubblewrap brings up the namespace's loopback before it blocks; slirp4netns configuring the
    // namespace at the same time makes that fail, so it waits until 127.0.0.1 is there.
    while (!(await readFile(`/proc/${pid}/net/fib_trie`, 'utf8').catch(() => '')).includes('127.0.0.1')) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await delay(2);
    }
    // --exit-fd: slirp4netns exits when the socket closes, which the worker's death does.
    slirp = spawn(
      slirp4netns,
      // The namespace belongs to a user namespace bubblewrap made; the worker's own is the one from which it may be entered.
      [
        '--configure',
        '--mtu=65520',
        '--disable-host-loopback',
        `--userns-path=/proc/${process.pid}/ns/user`,
        '--ready-fd=3',
        '--exit-fd=4',
        pid,
        'tap0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
    );
    let ready = false;
    let slirpErr = '';
    slirp.stderr!.on('data', (c: Buffer) => (slirpErr = (slirpErr + c.toString()).slice(-1_000)));
    slirp.once('error', (error) => fail(error.message));
    slirp.once('exit', (code, signal) => {
      if (!ready) fail(`slirp4netns exited ${code ?? signal}: ${slirpErr.trim() || 'no message'}`);
    });
    (slirp.stdio[3] as NodeJS.ReadableStream).once('data', () => {
      ready = true;
      clearTimeout(timer);
      block.end('1');
    });
  };
  let text = '';
  let attaching = false;
  info.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
    if (!pid || attaching) return;
    attaching = true;
    attach(pid).catch((error: Error) => fail(error.message));
  });
  // Its namespace lives on as long as slirp4netns holds its interface: it is stopped with the sandbox.
  // A spawn that failed emits 'error' and 'close' but no 'exit': nothing is left to report then.
  const ended = () => {
    failed = true;
    clearTimeout(timer);
    slirp?.kill('SIGTERM');
  };
  child.once('exit', ended);
  child.once('close', ended);
  // A sandbox that dies first closes its ends: nothing to report there, the exit says it all.
  block.on('error', () => undefined);
  return child;
}
