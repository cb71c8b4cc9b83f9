// S6: one isolated run cannot take its worker's machine: its processes, one process's memory, file
// size and open files, its in-memory folders and its connections to its agent API endpoint are
// bounded. A real command agent under a per-run uid in bubblewrap tries to go past each bound.
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentApi } from '../../../src/api/agentApi.js';
import { InvalidInputError } from '../../../src/errors.js';
import { resolveAgentIsolation } from '../../../src/runners/isolation/agentIsolation.js';
import { agentLimitsFromEnv } from '../../../src/runners/isolation/limits.js';
import { createCommandRunner } from '../../../src/runners/commandRunner.js';
import { createScriptedRepo } from '../../../src/testkit/scriptedRepo.js';
import type { Claim } from '../../../src/tasks/types.js';
import { taskIdOf } from '../../../src/tasks/taskId.js';
import { requireIsolationHost } from '../isolationHost.js';

const MIB = 1024 * 1024;
const LIMITS = { processes: 40, memoryBytes: 256 * MIB, fileBytes: MIB, openFiles: 64, scratchBytes: 4 * MIB, connections: 4 };
const CONNECTIONS_TRIED = 20;

/** Tries to go past every bound, then reports what it got; the last part forks nothing, as the process bound is reached by then. */
const GREEDY_AGENT = [
  'echo "OPEN_FILES $(ulimit -n)"',
  'head -c $((2 * 1024 * 1024)) /dev/zero > big.bin 2>/dev/null; echo "BIG $(wc -c < big.bin)"',
  'for i in 1 2 3 4 5 6 7 8; do head -c $((1024 * 1024)) /dev/zero > /tmp/f$i 2>/dev/null; done; echo "SCRATCH $(cat /tmp/f* | wc -c)"',
  'for i in 1 2 3 4 5 6 7 8; do head -c $((1024 * 1024)) /dev/zero > /dev/shm/f$i 2>/dev/null; done; echo "SHM $(cat /dev/shm/f* | wc -c)"',
  `node -e 'try { Buffer.alloc(512 * 1024 * 1024); console.log("MEMORY granted") } catch { console.log("MEMORY refused") }'`,
  // Holds ${CONNECTIONS_TRIED} connections to its endpoint and reports how many the endpoint kept open, once it closed the rest.
  `node -e '
    const net = require("net"); let closed = 0, connected = 0;
    for (let i = 0; i < ${CONNECTIONS_TRIED}; i++) {
      const s = net.connect(process.env.BATON_SOCKET);
      s.on("connect", () => connected++); s.on("error", () => {}); s.on("close", () => closed++);
    }
    const done = setInterval(() => {
      if (connected + closed >= ${CONNECTIONS_TRIED} && closed >= ${CONNECTIONS_TRIED - LIMITS.connections}) { console.log("CONNECTIONS", ${CONNECTIONS_TRIED} - closed); process.exit(0); }
    }, 50);
    setTimeout(() => { console.log("CONNECTIONS", ${CONNECTIONS_TRIED} - closed); process.exit(0); }, 60000);'`,
  '(for i in $(seq 1 200); do sleep 60 & done) 2>/dev/null',
  'set -- /proc/[0-9]*; echo "PROCESSES $#"',
].join('\n');

/** An endpoint that answers every call with an empty object: this test counts connections, not calls. */
const quietApi: AgentApi = { perform: async () => ({}), handle: (_req, res) => void res.end('{}') };

describe('S6: the bounds of one isolated run', () => {
  requireIsolationHost({ root: true, bubblewrap: true });
  let scratch: string;
  let repo: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'baton-limits-'));
    await chmod(scratch, 0o755); // per-run users pass through it to their folders
    repo = await createScriptedRepo();
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  });

  it('keeps processes, memory, file size, open files, in-memory folders and endpoint connections within its limits', async () => {
    const isolation = await resolveAgentIsolation({
      user: 'per-run',
      sandbox: 'bubblewrap',
      network: 'none',
      root: path.join(scratch, 'agents'),
      limits: LIMITS,
    });
    expect(isolation.prlimit).toBeDefined();
    const runner = createCommandRunner({ workDir: path.join(scratch, 'work'), isolation });
    const graphId = `limits-${randomUUID().slice(0, 8)}`;
    const claim = {
      taskId: taskIdOf(graphId, 'greedy'),
      graphId,
      key: 'greedy',
      claimVersion: 1,
      spec: { run: { command: GREEDY_AGENT }, verify: { command: 'true' } },
      upstreamRevisions: {},
    } as unknown as Claim;
    const lines: string[] = [];
    const run = runner.run({
      claim,
      repo,
      base: 'main',
      signal: new AbortController().signal,
      log: (line) => lines.push(line),
      heartbeat: async () => {},
      openAgentApi: async () => ({ api: quietApi, token: 'unused' }),
    });
    await expect(run).rejects.toThrow(/committed nothing/);
    const report = Object.fromEntries(
      lines
        .map((l) => l.split(' '))
        .filter((w) => w.length === 2)
        .map(([k, v]) => [k, v]),
    );
    expect(report).toMatchObject({ OPEN_FILES: String(LIMITS.openFiles), BIG: String(LIMITS.fileBytes), MEMORY: 'refused' });
    expect(Number(report.SCRATCH)).toBeLessThanOrEqual(LIMITS.scratchBytes);
    expect(Number(report.SHM)).toBeLessThanOrEqual(LIMITS.scratchBytes);
    expect(Number(report.CONNECTIONS)).toBeLessThanOrEqual(LIMITS.connections);
    expect(Number(report.PROCESSES)).toBeLessThanOrEqual(LIMITS.processes);
    expect(Number(report.PROCESSES)).toBeGreaterThan(LIMITS.processes / 2); // it did fork up to its bound
  });
});

describe('BATON_AGENT_LIMITS', () => {
  it('reads any of the limits, with units for sizes, and refuses what it cannot read by name', () => {
    expect(agentLimitsFromEnv({})).toEqual({});
    expect(agentLimitsFromEnv({ BATON_AGENT_LIMITS: 'processes=512, memory=4G,file=2g,files=1024,scratch=256M,connections=16' })).toEqual({
      processes: 512,
      memoryBytes: 4 * 1024 * MIB,
      fileBytes: 2 * 1024 * MIB,
      openFiles: 1024,
      scratchBytes: 256 * MIB,
      connections: 16,
    });
    for (const bad of ['proceses=5', 'processes=5G', 'memory=-1', 'memory=0', 'files=ten']) {
      expect(() => agentLimitsFromEnv({ BATON_AGENT_LIMITS: bad }), bad).toThrow(InvalidInputError);
    }
    expect(() => agentLimitsFromEnv({ BATON_AGENT_LIMITS: 'proceses=5' })).toThrow(
      /cannot read "proceses=5"; expected name=number with names processes, memory, file, files, scratch, connections/,
    );
  });
});
