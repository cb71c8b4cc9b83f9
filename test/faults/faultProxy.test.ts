import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { startFaultProxy, throughProxy, type FaultProxy } from '../../src/testkit/faultProxy.js';
import type { TaskEvent } from '../../src/tasks/types.js';
import { claimViolations } from './claimInvariants.js';

/** An echo server: what a connection sends comes back. */
let echo: net.Server;
let proxy: FaultProxy;
beforeAll(async () => {
  echo = net.createServer((socket) => {
    socket.on('error', () => {}); // the proxy's resets reach this side too
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  proxy = await startFaultProxy(`127.0.0.1:${(echo.address() as net.AddressInfo).port}`);
});
afterAll(async () => {
  await proxy.close();
  await new Promise((resolve) => echo.close(resolve));
});

/** A connection through the proxy that collects what it receives and how it ended. */
async function connect() {
  const socket = net.connect(proxy.port, '127.0.0.1');
  const state = { received: '', error: undefined as (Error & { code?: string }) | undefined, closed: false };
  socket.on('data', (chunk) => (state.received += chunk.toString()));
  socket.on('error', (error) => (state.error = error));
  socket.on('close', () => (state.closed = true));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, state };
}
const until = (what: string, check: () => boolean) =>
  waitFor(
    what,
    async () => {
      if (!check()) throw new Error('not yet');
    },
    { timeoutMs: 120_000, intervalMs: 10 },
  );

describe('the fault proxy (test kit)', () => {
  it('passes, delays in order, holds everything while blackholed and delivers it on heal', async () => {
    const { socket, state } = await connect();
    socket.write('a');
    await until('a to come back', () => state.received === 'a');
    proxy.setMode({ kind: 'delay', ms: 50 });
    socket.write('b');
    socket.write('c');
    await until('b and c, in order', () => state.received === 'abc');
    proxy.setMode({ kind: 'blackhole' });
    socket.write('d');
    expect(proxy.openConnections()).toBe(1);
    // Something must not arrive: only a wait can show it. 'd' went out a round trip's worth ago.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(state.received).toBe('abc');
    proxy.setMode({ kind: 'pass' });
    await until('d after the heal', () => state.received === 'abcd');
    socket.destroy();
    await until('the proxy to close its side', () => proxy.openConnections() === 0);
  });

  it('resets open connections on demand, and refuses new ones while open ones carry on', async () => {
    const first = await connect();
    expect(proxy.reset()).toBe(1);
    await until('the reset to arrive', () => first.state.closed);
    expect(first.state.error?.code).toBe('ECONNRESET');

    const open = await connect();
    proxy.setMode({ kind: 'refuse' });
    const refused = net.connect(proxy.port, '127.0.0.1');
    const refusal = await new Promise<string | undefined>((resolve) => {
      refused.once('error', (e: Error & { code?: string }) => resolve(e.code));
      refused.once('close', () => resolve(undefined));
    });
    expect(refusal).toBe('ECONNRESET');
    open.socket.write('still here');
    await until('the open connection to carry on', () => open.state.received === 'still here');
    proxy.setMode({ kind: 'pass' });
    open.socket.destroy();
  });

  it('rewrites a URL to go through it', () => {
    expect(throughProxy('postgresql://u:p@db.example:5432/baton?sslmode=disable', proxy)).toBe(
      `postgresql://u:p@127.0.0.1:${proxy.port}/baton?sslmode=disable`,
    );
  });
});

describe('the invariants the fault tests check', () => {
  const event = (id: number, kind: string, fence: number, actor = 'w1'): TaskEvent => ({
    id,
    subjectId: 'g/t',
    seq: id,
    kind,
    actor,
    at: '',
    fence,
    reason: null,
    details: {},
  });
  const healthy = [
    event(1, 'claimed', 1),
    event(2, 'reclaimed_after_silence', 1, 'w2'),
    event(3, 'stale_write_refused', 1),
    event(4, 'claimed', 2, 'w2'),
    event(5, 'submitted', 2, 'w2'),
    event(6, 'verified', 2, 'v'),
  ];

  it('pass a recovery whose late write was refused', () => {
    expect(
      claimViolations(['g/t'], healthy, [
        { worker: 'w1', taskId: 'g/t', claimVersion: 1 },
        { worker: 'w2', taskId: 'g/t', claimVersion: 2 },
      ]),
    ).toEqual([]);
  });

  it('catch a late write that landed, a second verification, a lost task and an agent run twice for one claim', () => {
    const lateWrite = [...healthy.slice(0, 2), event(3, 'submitted', 1), ...healthy.slice(3)];
    expect(claimViolations(['g/t'], lateWrite, [])).toEqual(['g/t: submitted by w1 landed at claim version 1 after that claim ended']);
    expect(claimViolations(['g/t'], [...healthy, event(7, 'verified', 2, 'v')], [])).toEqual(['g/t: verified 2 times']);
    expect(claimViolations(['g/t'], healthy.slice(0, 5), [])).toEqual(['g/t: verified 0 times']);
    const twice = [
      { worker: 'w1', taskId: 'g/t', claimVersion: 1 },
      { worker: 'w2', taskId: 'g/t', claimVersion: 1 },
    ];
    expect(claimViolations(['g/t'], healthy, twice)).toEqual(['g/t: agent started twice for claim version 1']);
  });
});
