// `baton dev` starts its servers on ports of its own, and a port another process holds is refused
// before anything starts: a Temporal dev server that cannot bind its port would otherwise look
// ready when the server already on that port answers, and the stack would run attached to it.
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev/freePort.js';
import { cleanEnv, startCli, type CliProcess } from '../helpers/cli.js';

const homes: string[] = [];
const holders: net.Server[] = [];
const running: CliProcess[] = [];

afterAll(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  for (const holder of holders) holder.close();
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

/** Listens on `port` until the file's end, as another program holding it would. */
async function holdPort(port: number, host: string): Promise<void> {
  const holder = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => holder.once('error', reject).listen(port, host, resolve));
  holders.push(holder);
}

/** `baton dev` in a fresh baton home with these ports (0: a free one), until it exits or says it is ready (then stopped). */
async function dev(ports: { postgres?: number; temporal?: number; ui?: number; page?: number; ops?: number }) {
  const home = await mkdtemp(path.join(tmpdir(), 'baton-ports-'));
  await chmod(home, 0o755);
  homes.push(home);
  const args = ['dev', '--postgres-port', String(ports.postgres ?? 0), '--temporal-port', String(ports.temporal ?? 0)];
  args.push('--ui-port', String(ports.ui ?? 0), '--page-port', String(ports.page ?? 0), '--ops-port', String(ports.ops ?? 0));
  const process = startCli(args, cleanEnv({ BATON_HOME: home, TEMPORAL_CLI_PATH: inject('temporalCliPath') }));
  running.push(process);
  const ready = await process.waitForOutput(/Ready/).then(
    () => true,
    () => false, // it exited first
  );
  if (ready) process.child.kill('SIGINT');
  return { code: await process.exited, output: process.output(), home };
}

/** The refusal is one line, names the port and the flag, and nothing was started or left behind. */
async function expectRefused(result: Awaited<ReturnType<typeof dev>>, port: number, what: string, flag: string) {
  expect(result.output).not.toMatch(/Ready/);
  expect(result.code, result.output).toBe(1);
  expect(result.output.trim().split('\n'), result.output).toEqual([
    expect.stringMatching(
      new RegExp(
        `^baton: port ${port} for ${what} is taken by .+; choose another with \`baton dev ${flag} <port>\` \\(0 picks a free one\\)`,
      ),
    ),
  ]);
  expect(await readdir(result.home)).toEqual([]);
}

describe('baton dev on a port another process holds', () => {
  it('refuses a Temporal port where another Temporal server answers, rather than report Ready attached to it', async () => {
    // The run's own Temporal dev server, someone else's as far as this `baton dev` is concerned.
    const port = Number(new URL(`grpc://${inject('temporalAddress')}`).port);
    const result = await dev({ temporal: port });
    await expectRefused(result, port, 'the Temporal dev server', '--temporal-port');
    // Who holds it is named when this user may see it (`ss` or `lsof`).
    expect(result.output).toMatch(/taken by (temporal \(pid \d+\)|another process)/);
  });

  it.each([
    { server: 'postgres', what: 'the embedded Postgres', flag: '--postgres-port', host: '127.0.0.1' },
    { server: 'temporal', what: 'the Temporal dev server', flag: '--temporal-port', host: '127.0.0.1' },
    // A listener on every interface holds the loopback port too.
    { server: 'ui', what: 'the Temporal Web UI', flag: '--ui-port', host: '0.0.0.0' },
    { server: 'page', what: "the agent API and operator's page", flag: '--page-port', host: '127.0.0.1' },
    { server: 'ops', what: 'the metrics and health port', flag: '--ops-port', host: '127.0.0.1' },
  ] as const)('refuses a $server port held by another program, naming the port and $flag', async ({ server, what, flag, host }) => {
    const port = await freePort();
    await holdPort(port, host);
    const result = await dev({ [server]: port });
    await expectRefused(result, port, what, flag);
    expect(result.output).toMatch(new RegExp(`taken by (node \\(pid ${process.pid}\\)|another process)`));
  });
});
