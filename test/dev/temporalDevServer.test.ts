// The dev server picks some of its ports itself, and on a busy machine another process can take one
// between its pick and its bind (R2 failed so once, under load). A start that stops at once on a
// taken port is started again; any other failure, or a port that stays taken, is reported.
import net from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev/freePort.js';
import { startTemporalDevServer } from '../../src/dev/temporalDevServer.js';

/** Listens on `port` until closed, as another process holding it would (hanging up on whoever calls). */
async function holdPort(port: number): Promise<net.Server> {
  const holder = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => holder.once('error', reject).listen(port, '127.0.0.1', resolve));
  return holder;
}

describe('the Temporal dev server', () => {
  it('is started again when a port it needs was taken at its start', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    const lines: string[] = [];
    const server = await startTemporalDevServer({
      cliPath: inject('temporalCliPath'),
      port,
      headless: true,
      // The first start has failed on the taken port: free it before the next start binds.
      log: (line) => {
        lines.push(line);
        if (/was taken/.test(line)) holder.close();
      },
    });
    try {
      expect(lines).toContainEqual(expect.stringMatching(`127.0.0.1:${port} was taken. Starting it again \\(start 2 of 3\\)`));
      expect(server.address).toBe(`127.0.0.1:${port}`);
    } finally {
      await server.stop();
    }
  });

  it('reports a port that stays taken after the last start', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    const lines: string[] = [];
    try {
      const failure = await startTemporalDevServer({
        cliPath: inject('temporalCliPath'),
        port,
        headless: true,
        log: (l) => lines.push(l),
      }).catch((e: unknown) => e as Error);
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toMatch(/exited early[\s\S]*address already in use/);
      expect(lines.filter((l) => /was taken/.test(l))).toHaveLength(2);
    } finally {
      holder.close();
    }
  });
});
