import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { commitAll, createScriptedRepo } from '../../src/testkit/scriptedRepo.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { useTaskStack } from '../helpers/taskStack.js';

let dir: string;
let env: NodeJS.ProcessEnv;
const saved = { databaseUrl: process.env.DATABASE_URL, pgPassword: process.env.PGPASSWORD };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-cli-'));
});

const stack = useTaskStack({ worker: () => ({ workDir: path.join(dir, 'work') }) });

beforeAll(() => {
  // Credentials the worker holds; the agents it starts must not inherit them.
  process.env.PGPASSWORD = 'worker-secret';
  process.env.DATABASE_URL = stack.db.url;
  env = cleanEnv({ DATABASE_URL: stack.db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), BATON_ACTOR: 'cli-test' });
});

afterAll(() => {
  for (const [name, value] of [
    ['PGPASSWORD', saved.pgPassword],
    ['DATABASE_URL', saved.databaseUrl],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function graphFile(name: string, graph: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, YAML.stringify(graph));
  return file;
}

const graphCount = async () => (await stack.db.pool.query('SELECT count(*)::int AS n FROM baton.graphs')).rows[0].n as number;

describe('baton submit, status and events', () => {
  it('submits a YAML graph, shows progress until it settles, and prints the timeline', async () => {
    const repo = await createScriptedRepo();
    const file = await graphFile('graph.yaml', {
      id: 'cli-graph',
      repo: path.relative(dir, repo),
      policy: { heartbeatTimeoutMs: 5_000 },
      tasks: [
        { key: 'write', run: `echo hello > hello.txt && ${commitAll('hello')}`, verify: 'grep -q hello hello.txt' },
        {
          key: 'check',
          run: `echo checked >> hello.txt && ${commitAll('check')}`,
          verify: 'grep -q checked hello.txt',
          dependsOn: ['write'],
        },
        {
          // S4: the agent sees its claim but no database or Temporal credentials; the verifier checks.
          key: 'env',
          run: `env > agent-env.txt && ${commitAll('env')}`,
          verify:
            "grep -q '^BATON_CLAIM_VERSION=1$' agent-env.txt && ! grep -qE '^(DATABASE_URL|PG[A-Z]*|TEMPORAL_[A-Z_]*)=' agent-env.txt",
        },
      ],
    });
    const submit = await runCli(['submit', file, '--task-queue', stack.temporal.taskQueue, '--watch'], env);
    expect(submit.code, submit.output).toBe(0);
    expect(submit.stdout.trim()).toBe('cli-graph');
    expect(submit.output).toMatch(/3 verified/);

    // The table is data: stdout, with nothing on stderr.
    const status = await runCli(['status', 'cli-graph', '--no-follow'], env);
    expect(status.code, status.output).toBe(0);
    expect(status.stdout).toMatch(/graph cli-graph: 3 verified\n/);
    expect(status.stdout).toMatch(/check\s+verified\s+\S+\s+v1\s+1\s+[0-9a-f]{10}\s+write/);
    expect(status.stderr).toBe('');
    const json = await runCli(['status', 'cli-graph', '--json'], env);
    expect(json.code, json.output).toBe(0);
    const tasks = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: string; status: string; dependsOn: string[] });
    expect(tasks.map((t) => [t.key, t.status, t.dependsOn])).toEqual([
      ['check', 'verified', ['write']],
      ['env', 'verified', []],
      ['write', 'verified', []],
    ]);

    const events = await runCli(['events', 'cli-graph/check'], env);
    expect(events.code, events.output).toBe(0);
    expect(
      events.stdout
        .split('\n')
        .slice(1, -1)
        .map((line) => line.split(/\s{2,}/)[1]),
    ).toEqual(['created', 'released', 'claimed', 'submitted', 'verification_started', 'verified']);
    expect(events.stdout).toMatch(/released .*pinned write@[0-9a-f]{10}/);
  });

  it('lists graphs with their state and counts, as a table and as JSON lines, on stdout', async () => {
    const table = await runCli(['graphs', '--since', '1h'], env);
    expect(table.code, table.output).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^GRAPH\s+STATE\s+TASKS\s+SUBMITTED\s+BY\s+STATUSES$/);
    // Timestamps carry their zone.
    expect(rows).toContainEqual(
      expect.stringMatching(/^cli-graph\s+verified\s+3\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+cli-test\s+3 verified$/),
    );

    const json = await runCli(['graphs', '--json', '--status', 'verified', '--limit', '5'], env);
    expect(json.code, json.output).toBe(0);
    const graphs = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const listed = graphs.find((g) => g.id === 'cli-graph');
    expect(listed).toMatchObject({ state: 'verified', tasks: 3, submittedBy: 'cli-test', counts: { verified: 3, failed: 0 } });
    expect(Date.parse(listed!.submittedAt as string)).not.toBeNaN();
    expect(listed!.submittedAt).toMatch(/Z$/);
    expect(graphs.every((g) => g.state === 'verified')).toBe(true);

    const none = await runCli(['graphs', '--status', 'failed', '--json'], env);
    expect(none.code, none.output).toBe(0);
    expect(none.stdout).toBe('');
  });

  it('cancel prints what it cancelled and what it left on stdout, as text or JSON', async () => {
    const cancel = await runCli(['cancel', 'cli-graph', '--reason', 'done already'], env);
    expect(cancel.code, cancel.output).toBe(0);
    expect(cancel.stdout.trimEnd().split('\n')).toEqual([
      'Cancelled 0 task(s).',
      'Left cli-graph/check as it is (verified).',
      'Left cli-graph/env as it is (verified).',
      'Left cli-graph/write as it is (verified).',
    ]);
    const json = await runCli(['cancel', 'cli-graph', '--reason', 'done already', '--json'], env);
    expect(json.code, json.output).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      cancelled: [],
      left: expect.arrayContaining([{ taskId: 'cli-graph/check', status: 'verified' }]),
    });
  });

  it('lists the tasks awaiting approval and approves one as BATON_ACTOR: it is verified, its dependent released', async () => {
    const repo = await createScriptedRepo();
    const file = await graphFile('approval.yaml', {
      id: 'cli-approval',
      repo: path.relative(dir, repo),
      tasks: [
        {
          key: 'ship',
          run: `echo shipped > ship.txt && ${commitAll('ship')}`,
          verify: { command: 'grep -q shipped ship.txt', approval: true },
        },
        { key: 'tell', run: `echo told > tell.txt && ${commitAll('tell')}`, verify: 'grep -q told tell.txt', dependsOn: ['ship'] },
      ],
    });
    expect((await runCli(['submit', file, '--task-queue', stack.temporal.taskQueue], env)).code).toBe(0);
    const waiting = await waitFor(
      'ship to await approval',
      async () => {
        const listed = await runCli(['approvals', '--json'], env);
        const approvals = JSON.parse(listed.stdout) as Array<{ taskId: string; revision: string }>;
        if (!approvals.some((a) => a.taskId === 'cli-approval/ship')) throw new Error(`not yet: ${listed.output}`);
        return approvals;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(waiting).toEqual([expect.objectContaining({ taskId: 'cli-approval/ship', dueAt: null, onTimeout: 'reject' })]);
    const text = await runCli(['approvals'], env);
    expect(text.stdout).toMatch(/^cli-approval\/ship {2}revision [0-9a-f]{12} {2}waiting since \S+ {2}ship\n$/);

    const noReason = await runCli(['reject', 'cli-approval/ship'], env);
    expect(noReason.code).not.toBe(0);
    expect(noReason.stderr).toContain("required option '--reason <text>' not specified");
    const approved = await runCli(['approve', 'cli-approval/ship', '--reason', 'looks right'], env);
    expect(approved.code, approved.output).toBe(0);
    expect(approved.stdout).toBe('Task cli-approval/ship is verified. Released: cli-approval/tell.\n');
    expect((await stack.client.waitForGraph('cli-approval')).verified.sort()).toEqual(['cli-approval/ship', 'cli-approval/tell']);
    expect((await stack.client.events('cli-approval/ship')).find((e) => e.kind === 'approved')).toMatchObject({
      actor: 'cli-test',
      reason: 'looks right',
    });
    // Decided once: again, it is refused (exit 2) and nothing changes.
    const again = await runCli(['approve', 'cli-approval/ship'], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('cli-approval/ship is not awaiting approval: it is verified');
  });

  it('adds a task to a graph that has run, which runs on the verified revision it depends on; a bad addition writes nothing', async () => {
    const more = await graphFile('more.yaml', {
      tasks: [
        {
          key: 'extra',
          run: `cat ship.txt > extra.txt && ${commitAll('extra')}`,
          verify: 'grep -q shipped extra.txt',
          dependsOn: ['ship'],
        },
      ],
    });
    const added = await runCli(['add', 'cli-approval', more, '--task-queue', stack.temporal.taskQueue], env);
    expect(added.code, added.output).toBe(0);
    expect(added.stdout).toBe('cli-approval/extra  ready\n');
    const extra = await waitFor(
      'the added task verified',
      async () => {
        const task = await stack.client.task('cli-approval/extra');
        if (task.status !== 'verified') throw new Error(`extra is ${task.status}`);
        return task;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(Object.keys(extra.upstreamRevisions)).toEqual(['ship']);
    const again = await runCli(['add', 'cli-approval', more, '--task-queue', stack.temporal.taskQueue], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("task 'extra': duplicate key");
    expect((await stack.client.graphTasks('cli-approval')).map((t) => t.key).sort()).toEqual(['extra', 'ship', 'tell']);
  });

  it('lists the subtasks an agent proposed for review, declines one and accepts another, which then runs', async () => {
    const repo = await createScriptedRepo();
    const propose = (key: string) =>
      `baton api task.propose '{"tasks": [{"key": "${key}", "description": "${key} it", "dependsOn": ["plan"]}]}'`;
    // Every task runs this agent; only plan proposes.
    const agent = [
      'set -e',
      'baton api context > context.json',
      `if node -e 'process.exit(JSON.parse(require("fs").readFileSync("context.json", "utf8")).key === "plan" ? 0 : 1)'; then`,
      `${propose('document')} && ${propose('polish')}`,
      'fi',
      commitAll('work'),
    ].join('\n');
    const file = await graphFile('proposing.yaml', {
      id: 'cli-proposing',
      repo: path.relative(dir, repo),
      tasks: [{ key: 'plan', run: { command: agent, agent: 'cli-planner' }, verify: 'test -s context.json' }],
    });
    expect((await runCli(['submit', file, '--task-queue', stack.temporal.taskQueue], env)).code).toBe(0);
    await stack.client.waitForGraph('cli-proposing');
    const listed = await runCli(['proposals', '--graph', 'cli-proposing', '--json'], env);
    const [document, polish] = JSON.parse(listed.stdout) as Array<{ id: number; tasks: Array<{ key: string }> }>;
    expect([document!.tasks[0]!.key, polish!.tasks[0]!.key]).toEqual(['document', 'polish']);
    const text = await runCli(['proposals', '--graph', 'cli-proposing'], env);
    expect(text.stdout).toContain(`proposal ${document!.id}  from cli-proposing/plan (cli-planner) at `);
    expect(text.stdout).toContain('  document (after plan)  document it\n');

    const noReason = await runCli(['proposal', 'decline', String(polish!.id)], env);
    expect(noReason.stderr).toContain("required option '--reason <text>' not specified");
    const declined = await runCli(['proposal', 'decline', String(polish!.id), '--reason', 'not now'], env);
    expect(declined.code, declined.output).toBe(0);
    const accepted = await runCli(['proposal', 'accept', String(document!.id), '--task-queue', stack.temporal.taskQueue, '--json'], env);
    expect(accepted.code, accepted.output).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({
      status: 'accepted',
      decidedBy: 'cli-test',
      added: [{ taskId: 'cli-proposing/document' }],
    });
    await waitFor(
      'the accepted subtask verified',
      async () => {
        const task = await stack.client.task('cli-proposing/document');
        if (task.status !== 'verified') throw new Error(`document is ${task.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const all = JSON.parse((await runCli(['proposals', '--graph', 'cli-proposing', '--all', '--json'], env)).stdout);
    expect(all.map((p: { status: string }) => p.status)).toEqual(['accepted', 'declined']);
    expect((await runCli(['proposals', '--graph', 'cli-proposing'], env)).stderr).toContain('No proposal is waiting.');
  });

  it("sets and lifts a pool's limit as BATON_ACTOR, and refuses a bad one", async () => {
    const set = await runCli(['pool', 'limit', 'cli-pool', '2'], env);
    expect(set.code, set.output).toBe(0);
    expect(set.stderr).toContain("At most 2 of pool cli-pool's tasks run at once.");
    const { rows } = await stack.db.pool.query('SELECT max_running, set_by FROM baton.pool_limits WHERE pool = $1', ['cli-pool']);
    expect(rows).toEqual([{ max_running: 2, set_by: 'cli-test' }]);
    const bad = await runCli(['pool', 'limit', 'cli-pool', '0'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('not a positive integer: 0');
    const lifted = await runCli(['pool', 'limit', 'cli-pool', 'none'], env);
    expect(lifted.stderr).toContain('Pool cli-pool has no limit.');
    expect((await stack.db.pool.query('SELECT 1 FROM baton.pool_limits WHERE pool = $1', ['cli-pool'])).rows).toEqual([]);
  });

  it('archives finished graphs (a dry run first), whose events still read with baton events', async () => {
    const dry = await runCli(['archive', 'run', '--older-than', '0m', '--dry-run', '--json'], env);
    expect(dry.code, dry.output).toBe(0);
    const would = dry.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { graphId: string; events: number });
    expect(would.map((g) => g.graphId)).toContain('cli-approval');
    expect(dry.stderr).toMatch(/Would archive \d+ graph\(s\)\./);
    const eventsBefore = (await runCli(['events', 'cli-approval', '--json'], env)).stdout.trimEnd().split('\n');

    const run = await runCli(['archive', 'run', '--older-than', '0m'], env);
    expect(run.code, run.output).toBe(0);
    expect(run.stdout).toMatch(/^cli-approval {2}finished \S+ {2}\d+ events, 0 notes, 0 tool calls$/m);
    const eventsAfter = (await runCli(['events', 'cli-approval', '--json'], env)).stdout.trimEnd().split('\n');
    expect(eventsAfter.slice(0, -1)).toEqual(eventsBefore);
    expect(JSON.parse(eventsAfter.at(-1)!)).toMatchObject({ kind: 'archived', actor: 'cli-test' });
    const text = await runCli(['archive', 'show', 'cli-approval'], env);
    expect(text.stdout).toMatch(
      /^cli-approval: archived \S+ by cli-test, finished \S+; \d+ events \(baton events cli-approval\), 0 notes, 0 tool calls/,
    );
    const shown = await runCli(['archive', 'show', 'cli-approval', '--json'], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ graphId: 'cli-approval', archivedBy: 'cli-test', notes: [], toolCalls: [] });
    const live = await runCli(['archive', 'show', 'no-such-graph'], env);
    expect(live.code).toBe(2);
    expect(live.stderr).toContain('graph no-such-graph is not archived');
  });

  it('refuses an invalid graph with every problem named, and writes nothing', async () => {
    const before = await graphCount();
    const file = await graphFile('bad.yaml', {
      polcy: { maxAttempts: 2 },
      tasks: [
        { key: 'a', run: { function: 'f' }, verify: { function: 'v' }, dependsOn: ['b'] },
        { key: 'b', run: { function: 'f' }, verify: { function: 'v' }, dependsOn: ['a', 'ghost'] },
        { key: 'c', run: { comand: 'make' }, verify: { function: 'v' }, dependsOn: 'a' },
      ],
    });
    const result = await runCli(['submit', file], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      [
        'baton: invalid input: the graph has 6 problems:',
        "  - unknown key 'polcy' (did you mean 'policy'?)",
        "  - task 'c': dependsOn must be a list of task keys",
        "  - task 'c': unknown key 'run.comand' (did you mean 'run.command'?)",
        "  - task 'c': run must name exactly one of command, function or pool",
        "  - task 'b': unknown dependency 'ghost'",
        '  - dependency cycle: a -> b -> a\n',
      ].join('\n'),
    );
    const duplicate = await runCli(
      [
        'submit',
        await graphFile('dup.yaml', { id: 'cli-graph', tasks: [{ key: 'x', run: { function: 'f' }, verify: { function: 'v' } }] }),
      ],
      env,
    );
    expect(duplicate.code).toBe(2);
    expect(duplicate.stderr).toMatch(/^baton: invalid input: .*graph cli-graph already exists\n$/);
    expect(await graphCount()).toBe(before);
  });
});

describe('refusals', () => {
  it('are one line on stderr with the exit code of their error, and the stack only with --verbose', async () => {
    // NotFoundError and InvalidInputError exit 2 (ERROR_RESPONSES): the call is wrong.
    const refusals: Array<[string[], NodeJS.ProcessEnv, string]> = [
      [['events', 'cli-graph/nope'], env, 'task cli-graph/nope does not exist'],
      [['events', 'nosuchgraph'], env, 'graph nosuchgraph does not exist'],
      [['status', 'nosuchgraph', '--json'], env, 'graph nosuchgraph does not exist'],
      [['rerun', 'cli-graph/nope', '--reason', 'test'], env, 'task cli-graph/nope does not exist'],
      [['object', 'show', 'k'], { ...env, BATON_ACTOR: '' }, 'invalid input: say who you are: --as <actor> or BATON_ACTOR'],
    ];
    for (const [args, refusalEnv, message] of refusals) {
      const result = await runCli(args, refusalEnv);
      expect(result.code, result.output).toBe(2);
      expect(result.stdout, args.join(' ')).toBe('');
      // Exactly one line, beginning with the message.
      expect(result.stderr, args.join(' ')).toMatch(/^baton: [^\n]+\n$/);
      expect(result.stderr, args.join(' ')).toContain(`baton: ${message}`);
    }

    const verbose = await runCli(['--verbose', 'events', 'nosuchgraph'], env);
    expect(verbose.code).toBe(2);
    const [line, ...stack] = verbose.stderr.trimEnd().split('\n');
    expect(line).toBe('baton: graph nosuchgraph does not exist');
    expect(stack[0]).toBe('NotFoundError: graph nosuchgraph does not exist');
    expect(stack).toContainEqual(expect.stringMatching(/^ {4}at .*src\/db\/storeCall\.[jt]s/));
  });

  it('of what baton did not expect are one line and a hint to use --verbose, exit 1', async () => {
    const unreachable = { ...env, DATABASE_URL: 'postgresql://nobody:nothing@127.0.0.1:1/none' };
    const result = await runCli(['events', 'nosuchgraph'], unreachable);
    expect(result.code).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^baton: cannot reach Postgres at DATABASE_URL: connect ECONNREFUSED/),
      'baton: run again with --verbose to see the stack trace',
    ]);
    const verbose = await runCli(['--verbose', 'events', 'nosuchgraph'], unreachable);
    expect(verbose.code).toBe(1);
    expect(verbose.stderr).toMatch(/^Error: cannot reach Postgres[^\n]*\n {4}at /m);
    expect(verbose.stderr).not.toContain('run again with --verbose');
  });
});
