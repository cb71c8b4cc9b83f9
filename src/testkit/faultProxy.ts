// A TCP proxy that passes, delays, refuses or swallows connections on command: a network fault between baton and a server.
import net from 'node:net';

/**
 * What the proxy does with traffic, switchable at any time:
 * - pass: forwards bytes both ways as they come.
 * - delay: holds every chunk `ms` before forwarding it (order kept).
 * - refuse: resets each new connection as soon as it arrives; open ones carry on.
 * - blackhole: accepts and keeps connections but forwards nothing either way, and reads nothing
 *   (the kernels buffer, as in a partition), until the mode changes; then held bytes flow in order.
 */
type FaultMode = { kind: 'pass' } | { kind: 'delay'; ms: number } | { kind: 'refuse' } | { kind: 'blackhole' };

export interface FaultProxy {
  /** `127.0.0.1:<port>`, to put in place of the target's address. */
  address: string;
  port: number;
  mode(): FaultMode;
  setMode(mode: FaultMode): void;
  /** Destroys every open connection, both sides, with a TCP RST; returns how many there were. */
  reset(): number;
  /** Connections open now. */
  openConnections(): number;
  /** Resets what is open and stops listening. */
  close(): Promise<void>;
}

/** `url` (e.g. a DATABASE_URL) with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: FaultProxy): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.toString();
}

/**
 * A TCP proxy on loopback in front of `target` (`host:port`) whose faults the caller switches:
 * for tests that cut a worker off from Postgres or Temporal and heal it again. (Default mode: pass)
 */
export async function startFaultProxy(target: string, initial: FaultMode = { kind: 'pass' }): Promise<FaultProxy> {
  const { hostname: targetHost, port } = new URL(`tcp://${target}`);
  const targetPort = Number(port);
  let mode = initial;
  const open = new Set<{ client: net.Socket; upstream: net.Socket }>();
  // Resolved whenever the mode lets bytes flow; replaced by a pending one while blackholed.
  let flowing: { promise: Promise<void>; resolve: () => void } = settled();

  const server = net.createServer((client) => {
    if (mode.kind === 'refuse') {
      client.on('error', () => {}); // the refused peer may answer the reset; nothing to do about it
      return void client.resetAndDestroy();
    }
    const upstream = net.connect(targetPort, targetHost);
    const pair = { client, upstream };
    open.add(pair);
    const teardown = (error?: Error) => {
      open.delete(pair);
      // An error on one side reaches the other as a reset; a clean close as a close.
      for (const socket of [client, upstream]) {
        if (socket.destroyed) continue;
        if (error) socket.resetAndDestroy();
        else socket.destroy();
      }
    };
    for (const socket of [client, upstream]) {
      socket.on('error', teardown);
      socket.on('close', () => teardown());
    }
    relay(client, upstream);
    relay(upstream, client);
    if (mode.kind === 'blackhole') pauseAll();
  });

  /** Forwards `from` to `to` in order, each chunk after its delay and only while bytes may flow. */
  const relay = (from: net.Socket, to: net.Socket) => {
    let tail = Promise.resolve();
    const forward = (write: () => void) => {
      const due = Date.now() + (mode.kind === 'delay' ? mode.ms : 0);
      tail = tail.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await flowing.promise;
        if (!to.destroyed) write();
      });
    };
    from.on('data', (chunk: Buffer) => forward(() => to.write(chunk)));
    from.on('end', () => forward(() => to.end()));
  };
  const pauseAll = () => {
    for (const { client, upstream } of open) {
      client.pause();
      upstream.pause();
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const listening = (server.address() as net.AddressInfo).port;
  if (mode.kind === 'blackhole') flowing = pending();

  const reset = () => {
    const count = open.size;
    for (const { client, upstream } of [...open]) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    open.clear();
    return count;
  };
  return {
    address: `127.0.0.1:${listening}`,
    port: listening,
    mode: () => mode,
    setMode: (next) => {
      const wasBlackhole = mode.kind === 'blackhole';
      mode = next;
      if (next.kind === 'blackhole' && !wasBlackhole) {
        flowing = pending();
        pauseAll();
      } else if (next.kind !== 'blackhole' && wasBlackhole) {
        flowing.resolve();
        flowing = settled();
        for (const { client, upstream } of open) {
          client.resume();
          upstream.resume();
        }
      }
    },
    reset,
    openConnections: () => open.size,
    close: async () => {
      reset();
      flowing.resolve();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function pending(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function settled(): { promise: Promise<void>; resolve: () => void } {
  return { promise: Promise.resolve(), resolve: () => {} };
}
