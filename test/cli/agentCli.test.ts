// The agents' door from the command line (issue 12): an operator issues a token with `baton token
// create`, runs `baton serve` on the agent API's own login, and an agent elsewhere uses `baton
// object` and `baton api` with BATON_URL and BATON_TOKEN only; a revoked token stops working at
// once. Real processes, real Postgres.
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { insertGraph } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { cleanEnv, runCli, startCli, type CliProcess } from '../helpers/cli.js';

const db = useTestDatabase();
let serve: CliProcess | undefined;

afterAll(async () => {
  serve?.child.kill('SIGTERM');
  await serve?.exited;
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('baton token, baton serve and the agent CLI', () => {
  it("issues, uses, lists and revokes tokens; every call acts as the token's identity", async () => {
    const operator = cleanEnv({ DATABASE_URL: (await db.login('baton_client')).url, BATON_ACTOR: 'ops-olga' });
    const created = await runCli(['token', 'create', 'cli-agent', '--scope', 'read,objects', '--expires', '2h'], operator);
    expect(created.code, created.output).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^baton_[A-Za-z0-9_-]{43}$/);
    expect(created.output).toMatch(/token tok_[0-9a-f]{16} for cli-agent, scopes objects, read, expires 20\d\d-/);
    const tokenId = /token (tok_[0-9a-f]{16})/.exec(created.output)![1]!;
    const bad = await runCli(['token', 'create', 'x', '--scope', 'read,wrte'], operator);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/scope wrte: scopes are read, notes, objects, submit, view, approve, admin/);

    const port = await freePort();
    serve = startCli(['serve', '--port', String(port)], cleanEnv({ DATABASE_URL: (await db.login('baton_agent')).url }));
    await serve.waitForOutput(/baton agent API on http:\/\/127\.0\.0\.1:\d+/);
    const agent = cleanEnv({ BATON_URL: `http://127.0.0.1:${port}`, BATON_TOKEN: secret });

    const key = uniqueObjectKey('cli/notes');
    const made = await runCli(['object', 'create', key, '--content', 'v1'], agent);
    expect(made.code, made.output).toBe(0);
    const taken = await runCli(['object', 'take', key], agent);
    expect(taken.output).toMatch(/holder: cli-agent since/);
    const as = await runCli(['object', 'take', key, '--as', 'ops-olga'], agent);
    expect(as.code).not.toBe(0);
    expect(as.output).toMatch(/--as is for administrators on the database/);
    const whoami = await runCli(['api', 'whoami'], agent);
    expect(JSON.parse(whoami.stdout)).toMatchObject({ identity: 'cli-agent', id: tokenId, scopes: ['objects', 'read'] });
    const noScope = await runCli(['api', 'note.add', '{"text":"hi","taskId":"nope"}'], agent);
    expect(noScope.code).toBe(2);
    expect(noScope.output).toMatch(
      /note\.add refused \(forbidden\): token tok_[0-9a-f]{16} of cli-agent has scope objects, read; note\.add needs notes/,
    );

    const listed = await runCli(['token', 'list', '--json'], operator);
    const tokens = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(tokens.find((t) => t.id === tokenId)).toMatchObject({
      identity: 'cli-agent',
      createdBy: 'ops-olga',
      revokedAt: null,
      lastUsedAt: expect.any(String),
    });
    expect(listed.stdout).not.toContain(secret);

    const revoked = await runCli(['token', 'revoke', tokenId, '--reason', 'rotated'], operator);
    expect(revoked.code, revoked.output).toBe(0);
    const after = await runCli(['object', 'show', key], agent);
    expect(after.code).toBe(2);
    expect(after.output).toMatch(
      /object\.show refused \(unauthenticated\): token tok_[0-9a-f]{16} of cli-agent was revoked at .* by ops-olga: rotated/,
    );

    const { rows } = await db.pool.query(
      `SELECT kind, actor FROM baton.events WHERE subject_kind = 'object' AND subject_id = $1 ORDER BY subject_seq`,
      [key],
    );
    expect(rows.map((r) => `${r.kind}:${r.actor}`)).toEqual(['created:cli-agent', 'taken:cli-agent']);
  });

  it('says plainly that it cannot reach the agent API when nothing listens at BATON_URL: one line, exit 1', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const args of [
      ['api', 'whoami'],
      ['object', 'show', 'plans/anything'],
    ]) {
      const result = await runCli(args, cleanEnv({ BATON_URL: url, BATON_TOKEN: 'baton_not-a-real-token' }));
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stdout, args.join(' ')).toBe('');
      expect(result.stderr.trimEnd().split('\n'), args.join(' ')).toEqual([
        `baton: cannot reach the baton agent API at ${url}: nothing is listening there (connection refused); nothing was done (is \`baton serve\`, or the run, still there?)`,
      ]);
    }
  });

  it('grants a token the notes of graphs and tasks (S6) and pools (U11), says so, lists the grants, and refuses a grant of what does not exist', async () => {
    const operator = cleanEnv({ DATABASE_URL: (await db.login('baton_client')).url, BATON_ACTOR: 'ops-olga' });
    const graphId = await insertGraph(db.pool, { a: [] }, { prefix: 'cli-grants' });
    const otherGraphId = await insertGraph(db.pool, { b: [] }, { prefix: 'cli-grants' });
    const granted = await runCli(
      [
        'token',
        'create',
        'graph-bot',
        '--scope',
        'read,notes,submit',
        '--graph',
        graphId,
        '--task',
        `${otherGraphId}/b`,
        '--pool',
        'nightly',
      ],
      operator,
    );
    expect(granted.code, granted.output).toBe(0);
    expect(granted.output).toMatch(
      new RegExp(
        `for graph-bot, scopes notes, read, submit, never expires, notes of graph ${graphId}; task ${otherGraphId}/b only, work from pool nightly only\\.`,
      ),
    );
    const plain = await runCli(['token', 'create', 'ops-bot'], operator);
    expect(plain.output).toMatch(/for ops-bot, .*, notes of every task, work from any pool\./);

    const listed = await runCli(['token', 'list'], operator);
    expect(listed.stdout).toMatch(
      new RegExp(`graph-bot .* notes of graph ${graphId}; task ${otherGraphId}/b only, work from pool nightly only\n`),
    );
    expect(listed.stdout).toMatch(/ops-bot .* notes of every task, work from any pool\n/);
    const json = (await runCli(['token', 'list', '--json'], operator)).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(json.find((t) => t.identity === 'graph-bot')).toMatchObject({
      noteGrants: { graphs: [graphId], tasks: [`${otherGraphId}/b`] },
      pools: ['nightly'],
    });
    expect(json.find((t) => t.identity === 'ops-bot')).toMatchObject({ noteGrants: null, pools: null });

    const typo = await runCli(['token', 'create', 'typo-bot', '--graph', `${graphId}x`], operator);
    expect(typo.code).not.toBe(0);
    expect(typo.output).toMatch(new RegExp(`graph ${graphId}x does not exist`));
  });
});
