// Before the local stack starts a server on a port it was given, it makes sure the port is free:
// a server that cannot bind may still look ready when another one answers on its port (a
// Temporal dev server of someone else's), and the stack would run attached to it.
import net from 'node:net';
import { PortTakenError, type DevServer } from './errors.js';
import { run } from './run.js';

/** How long a look at who holds a port may take before the refusal goes without it. */
const PORT_HOLDER_LOOKUP_TIMEOUT_MS = 2_000;

/**
 * Resolves when `port` on 127.0.0.1 can be bound (a listener on every interface, `0.0.0.0` or
 * `::`, takes it too); else throws PortTakenError naming what holds it, when this user may see it.
 */
export async function requirePortFree(port: number, server: DevServer): Promise<void> {
  if (await canBind(port)) return;
  throw new PortTakenError(port, server, await portHolder(port));
}

/** Whether `port` on 127.0.0.1 can be bound now (it is free, on every interface). */
export function canBind(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(false) : reject(error)));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** `name (pid N)` of the process listening on `port`, from `ss` or else `lsof`; undefined when neither says. */
async function portHolder(port: number): Promise<string | undefined> {
  const options = { timeoutMs: PORT_HOLDER_LOOKUP_TIMEOUT_MS };
  const ss = await run('ss', ['-Hltnp', `sport = :${port}`], options).catch(() => undefined);
  const fromSs = /users:\(\("([^"]+)",pid=(\d+)/.exec(ss?.stdout ?? '');
  if (fromSs) return `${fromSs[1]} (pid ${fromSs[2]})`;
  const lsof = await run('lsof', ['-nP', `-iTCP:${port}`, '-sTCP:LISTEN', '-Fpc'], options).catch(() => undefined);
  const fromLsof = /^p(\d+)\nc(.+)$/m.exec(lsof?.stdout ?? '');
  return fromLsof ? `${fromLsof[2]} (pid ${fromLsof[1]})` : undefined;
}
