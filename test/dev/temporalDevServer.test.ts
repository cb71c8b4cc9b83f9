// The dev server picks some of its ports itself, and on a busy machine another process can take one
// between its pick and its bind (R2 failed so once, under load). A start that stops at once on a
// taken port is started again; any other failure, or a port that stays taken, is reported.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

  // A port the server picks itself and finds taken as it binds makes it panic: the cause comes
  // first, then a stack far longer than what is kept of the output (CI failed so once).
  it('sees a taken port in a panic whose stack runs long', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-panicking-cli-'));
    const cli = path.join(dir, 'temporal');
    const stack = Array.from(
      { length: 400 },
      (_, i) => `go.uber.org/fx.frame${i}(0x1ee1561a7da8)\n\t/go/pkg/mod/fx/app.go:${i} +0x867`,
    ).join('\n');
    await writeFile(
      cli,
      `#!/bin/sh\ncat >&2 <<'PANIC'\npanic: listen tcp 127.0.0.1:7236: bind: address already in use\n\ngoroutine 1 [running]:\n${stack}\nPANIC\nexit 2\n`,
    );
    await chmod(cli, 0o755);
    const lines: string[] = [];
    try {
      const failure = await startTemporalDevServer({ cliPath: cli, headless: true, log: (l) => lines.push(l) }).catch(
        (e: unknown) => e as Error,
      );
      expect((failure as Error).message).toMatch(
        /exited early \(code 2[\s\S]*127\.0\.0\.1:7236: bind: address already in use[\s\S]*frame399/,
      );
      expect(lines.filter((l) => /127\.0\.0\.1:7236 was taken/.test(l))).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
