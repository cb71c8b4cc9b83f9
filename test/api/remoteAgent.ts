// A remote agent for the pooled-run tests: a process of its own that holds only an API token (no
// Postgres or Temporal credential). It asks for work from a pool, clones the repository its task
// names, merges the pinned upstream revisions its context names, commits, pushes the commit to a
// branch, heartbeats and submits, over plain HTTP (`http`) or as an MCP client over Streamable
// HTTP (`mcp`), heartbeating while it works (its git commands run asynchronously, so the beats keep
// coming on a busy machine). `silent` stops after its first heartbeat and, when told on stdin (any line), tries
// its submit anyway: the late write of a recovered agent. Three game their verification (T12):
// `idle` submits what it was given, having done nothing; `skip-upstream` works on the base without
// merging its pinned upstream revisions; `edit-check` also rewrites the check script (check.sh);
// `plant-dotgit` pushes a commit with a `.git` folder, made with git's plumbing.
// Prints one JSON line per step. Usage: REMOTE_AGENT_TOKEN=... node --import tsx remoteAgent.ts '<RemoteAgentConfig JSON without token>'
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export interface RemoteAgentConfig {
  url: string;
  /** Passed in REMOTE_AGENT_TOKEN, not on the command line. */
  token: string;
  pool: string;
  transport: 'http' | 'mcp';
  behaviour: 'work' | 'silent' | 'idle' | 'skip-upstream' | 'edit-check' | 'plant-dotgit';
}

/** How often a working agent heartbeats: well within the shortest heartbeat timeout the tests give a working agent (10 s). */
const HEARTBEAT_EVERY_MS = 2_000;

const config = { ...JSON.parse(process.argv[2]!), token: process.env.REMOTE_AGENT_TOKEN! } as RemoteAgentConfig;
const say = (step: string, details: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ step, ...details })}\n`);

type Call = (operation: string, input: Record<string, unknown>, token: string) => Promise<{ ok: boolean; body: any }>;

const httpCall: Call = async (operation, input, token) => {
  const response = await fetch(`${config.url}/v1/${operation}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  return { ok: response.ok, body: await response.json() };
};

const mcpClients = new Map<string, Client>();
const mcpCall: Call = async (operation, input, token) => {
  let client = mcpClients.get(token);
  if (!client) {
    client = new Client({ name: 'remote-agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${config.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    mcpClients.set(token, client);
  }
  const result = (await client.callTool({ name: operation.replaceAll('.', '_'), arguments: input })) as {
    isError?: boolean;
    content: { text: string }[];
  };
  return { ok: !result.isError, body: JSON.parse(result.content[0]!.text) };
};

const call = config.transport === 'mcp' ? mcpCall : httpCall;

async function main(): Promise<void> {
  let work: any = null;
  while (!work) {
    const claimed = await call('pool.claim', { pool: config.pool, waitSeconds: 5 }, config.token);
    if (!claimed.ok) throw new Error(`pool.claim refused: ${JSON.stringify(claimed.body)}`);
    work = claimed.body;
  }
  const runToken: string = work.runToken;
  say('claimed', { taskId: work.taskId, claimVersion: work.claimVersion, identity: work.identity });
  const context = await call('context', {}, runToken);
  say('context', { ok: context.ok, description: context.body.description, repo: context.body.repo });
  const beat = await call('heartbeat', { progress: { phase: 'cloning' } }, runToken);
  say('heartbeat', { ok: beat.ok });
  // A working agent keeps beating until it has submitted; a silent one never beats again.
  const beating =
    config.behaviour === 'silent'
      ? undefined
      : setInterval(() => void call('heartbeat', {}, runToken).catch(() => undefined), HEARTBEAT_EVERY_MS);
  try {
    await doTask(work, context.body, runToken);
  } finally {
    clearInterval(beating);
  }
  for (const client of mcpClients.values()) await client.close();
}

/** Clones, merges, commits and pushes as its behaviour says, then submits (a silent agent when told to). */
async function doTask(work: any, context: any, runToken: string): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-remote-agent-'));
  const run = promisify(execFile);
  const git = async (...args: string[]) =>
    (
      await run('git', ['-C', dir, '-c', 'user.name=remote', '-c', 'user.email=remote@localhost', ...args], { encoding: 'utf8' })
    ).stdout.trim();
  await run('git', ['clone', '-q', context.repo, dir]);
  await git('checkout', '-q', context.base);
  if (config.behaviour !== 'skip-upstream') {
    for (const upstream of context.upstream as { key: string; revision: string }[])
      await git('merge', '-q', '--no-edit', upstream.revision);
  }
  if (config.behaviour === 'edit-check') writeFileSync(path.join(dir, 'check.sh'), 'exit 0\n');
  if (config.behaviour !== 'idle') {
    writeFileSync(path.join(dir, 'review.txt'), `reviewed by ${work.identity} for ${work.taskId}\n`);
    await git('add', '-A');
    await git('commit', '-q', '-m', `review of ${work.key}`);
  }
  if (config.behaviour === 'plant-dotgit') {
    const blob = execFileSync('git', ['-C', dir, 'hash-object', '-w', '--stdin'], { input: '[core]\n', encoding: 'utf8' }).trim();
    const folder = execFileSync('git', ['-C', dir, 'mktree'], { input: `100644 blob ${blob}\tconfig\n`, encoding: 'utf8' }).trim();
    const tree = execFileSync('git', ['-C', dir, 'mktree'], {
      input: `${await git('ls-tree', 'HEAD')}\n040000 tree ${folder}\t.git\n`,
      encoding: 'utf8',
    }).trim();
    await git('update-ref', 'HEAD', await git('commit-tree', tree, '-p', 'HEAD', '-m', 'planted'));
  }
  const revision = await git('rev-parse', 'HEAD');

  if (config.behaviour === 'silent') {
    say('silent', { revision });
    // Wait, saying nothing to baton, until the test says the task was recovered; then try anyway.
    await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
  } else {
    const note = await call('note.add', { text: `review done: ${revision}` }, runToken);
    say('note', { ok: note.ok });
  }
  await git('push', '-q', 'origin', `HEAD:refs/heads/remote/${work.taskId.replaceAll('/', '-')}-${work.claimVersion}`);
  const submitted = await call('submit', { revision }, runToken);
  say('submit', { ok: submitted.ok, body: submitted.body, revision });
}

main().catch((error: unknown) => {
  say('error', { message: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
});
