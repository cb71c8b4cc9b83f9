import { describe, expect, it } from 'vitest';
import { InvalidGraphError, InvalidInputError } from '../../src/errors.js';
import { findCycle, MAX_SUBTASKS_PER_TASK, MAX_TASKS_PER_GRAPH, parseGraphSpec, parseSubtasks } from '../../src/tasks/graphSpec.js';

const task = (key: string, dependsOn: string[] = []) => ({ key, dependsOn, run: { function: 'f' }, verify: { function: 'v' } });
/** The refusal of `input`: an InvalidGraphError (so an InvalidInputError too). */
const refusal = (input: unknown): InvalidGraphError => {
  try {
    parseGraphSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidGraphError);
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidGraphError;
  }
  throw new Error('expected the graph to be refused');
};
const problems = (input: unknown) => refusal(input).message;

describe('graph validation (T8)', () => {
  it('fills in defaults for a valid graph', () => {
    const graph = parseGraphSpec({ id: 'sdk', tasks: [task('a'), task('b', ['a'])] });
    expect(graph).toMatchObject({
      id: 'sdk',
      base: 'HEAD',
      policy: { maxAttempts: 3, onVerificationFailure: 'rerun', heartbeatTimeoutMs: 10_000, onUpstreamChange: 'rerun' },
    });
    expect(graph.tasks.map((t) => [t.key, t.dependsOn])).toEqual([
      ['a', []],
      ['b', ['a']],
    ]);
  });

  it('names an unknown dependency, a duplicate key and a self-dependency, all at once', () => {
    const message = problems({ tasks: [task('a', ['ghost']), task('a'), task('c', ['c'])] });
    expect(message).toMatch(/task 'a': duplicate key/);
    expect(message).toMatch(/task 'a': unknown dependency 'ghost'/);
    expect(message).toMatch(/task 'c': depends on itself/);
  });

  it('reads a null command or function as absent: a step must still name exactly one (found by fuzzing)', () => {
    expect(problems({ tasks: [{ key: 'a', run: { function: null }, verify: { command: 'true' } }] })).toMatch(
      /task 'a': run must name exactly one of command, function or pool/,
    );
    expect(
      parseGraphSpec({ tasks: [{ key: 'a', run: { command: null, function: 'f' }, verify: { function: 'v' } }] }).tasks[0]!.spec.run,
    ).toEqual({ function: 'f' });
  });

  it('takes a pool of remote agents to run a task, and an agent name, with the same strictness', () => {
    const spec = parseGraphSpec({
      repo: '/r',
      tasks: [
        { key: 'a', run: { pool: 'reviewers' }, verify: { command: 'true' } },
        { key: 'b', run: { command: 'x', agent: 'reviewer' }, verify: { command: 'true' } },
      ],
    });
    expect(spec.tasks.map((t) => t.spec.run)).toEqual([{ pool: 'reviewers' }, { command: 'x', agent: 'reviewer' }]);
    expect(
      refusal({ repo: '/r', tasks: [{ key: 'a', run: { pool: 'Reviewers!', command: 'x' }, verify: { function: 'f', pool: 'p' } }] })
        .problems,
    ).toEqual([
      "task 'a': run must name exactly one of command, function or pool",
      `task 'a': run.pool must match /^[a-z0-9][a-z0-9_-]{0,62}$/`,
      "task 'a': unknown key 'verify.pool'",
    ]);
    expect(problems({ tasks: [{ key: 'a', run: { pool: 'p', agent: 'me' }, verify: { function: 'f' } }] })).toMatch(
      /run.agent names a worker run's agent; a pooled run's agent is whoever takes it/,
    );
  });

  it('shows the cycle', () => {
    expect(problems({ tasks: [task('a', ['c']), task('b', ['a']), task('c', ['b'])] })).toMatch(/dependency cycle: a -> c -> b -> a/);
    expect(findCycle([{ key: 'x', dependsOn: [] }])).toBeUndefined();
  });

  it('refuses oversized graphs and specs', () => {
    const many = Array.from({ length: MAX_TASKS_PER_GRAPH + 1 }, (_, i) => task(`t${i}`));
    expect(problems({ tasks: many })).toContain(`at most ${MAX_TASKS_PER_GRAPH} tasks`);
    expect(problems({ tasks: [{ ...task('long'), description: 'x'.repeat(2_001) }] })).toMatch(/longer than 2000 characters/);
    expect(problems({ tasks: [{ ...task('big'), payload: 'x'.repeat(70_000) }] })).toMatch(/task 'big': spec is larger than 65536 bytes/);
  });

  it('requires a verification for every task and a repo for commands', () => {
    expect(problems({ tasks: [{ key: 'a', run: { function: 'f' } }] })).toMatch(/verify must name exactly one of command or function/);
    expect(problems({ tasks: [{ key: 'a', run: 'make', verify: 'make test' }] })).toMatch(/repo is required/);
  });

  it('takes a remote as the repo, as written, and refuses transports that run programs and URLs that carry a secret', () => {
    const resolveRepo = (repo: string) => `/graphs/${repo}`;
    const repoOf = (repo: string) => parseGraphSpec({ repo, tasks: [task('a')] }, { resolveRepo }).repo;
    for (const remote of ['https://git.example.com/team/app.git', 'ssh://git@host/app', 'git://127.0.0.1/app', 'file:///srv/app.git']) {
      expect(repoOf(remote)).toBe(remote);
    }
    expect(repoOf('git@github.com:team/app.git')).toBe('git@github.com:team/app.git');
    // Paths are resolved as the caller says, including one with a colon that git reads as a path.
    expect(repoOf('repos/app')).toBe('/graphs/repos/app');
    expect(repoOf('./odd:name')).toBe('/graphs/./odd:name');

    expect(refusal({ repo: 'ext::sh -c touch% /tmp/pwned', tasks: [task('a')] }).problems).toEqual([
      'repo: git transport ext:: is not allowed: use a URL (file, git, ssh, http, https)',
    ]);
    expect(problems({ repo: 'fd::3', tasks: [task('a')] })).toMatch(/git transport fd:: is not allowed/);
    expect(problems({ repo: 'ftp://host/app.git', tasks: [task('a')] })).toMatch(/git transport ftp:\/\/ is not allowed \(file, git, ssh/);
    expect(problems({ repo: 'https://bot:ghp_secret@git.example.com/app.git', tasks: [task('a')] })).toMatch(
      /repo: it holds a password or token, which every agent of the graph would read: give the workers a credential helper or SSH key/,
    );
    expect(problems({ repo: 'ssh://-oProxyCommand=x/app', tasks: [task('a')] })).toMatch(/host "-oProxyCommand=x" starts with '-'/);
    expect(problems({ repo: '-oProxyCommand=x:app', tasks: [task('a')] })).toMatch(/host "-oProxyCommand=x" starts with '-'/);
  });

  it('refuses bad keys, ids and policies with specific messages', () => {
    expect(problems({ id: 'Not Valid', tasks: [task('a')] })).toMatch(/id 'Not Valid' must match/);
    expect(problems({ tasks: [task('UPPER')] })).toMatch(/task 'UPPER': key must match/);
    expect(refusal({ policy: { maxAttempts: 0, onVerificationFailure: 'shrug' }, tasks: [task('a')] }).problems).toEqual([
      `policy.onVerificationFailure must be 'rerun' or 'fail', not "shrug"`,
      'policy.maxAttempts must be an integer from 1 to 100',
    ]);
    expect(problems({ policy: { heartbeatTimeoutMs: 2 ** 31 }, tasks: [task('a')] })).toMatch(
      /heartbeatTimeoutMs must be an integer from 1000 to 3600000/,
    );
    expect(problems({ policy: { onUpstreamChange: 'ignore' }, tasks: [task('a')] })).toMatch(
      /policy.onUpstreamChange must be 'rerun' or 'mark', not "ignore"$/,
    );
    expect(parseGraphSpec({ policy: { onUpstreamChange: 'mark' }, tasks: [task('a')] }).policy.onUpstreamChange).toBe('mark');
    expect(problems('tasks: []')).toMatch(/a graph must be a mapping/);
    expect(problems({ tasks: [] })).toMatch(/tasks must be a non-empty list/);
  });

  it('refuses an unknown key at every level, naming it, where it is and the key that was probably meant', () => {
    const graph = {
      polcy: { maxAttempts: 2 },
      policy: { maxAttempt: 2 },
      tasks: [
        { ...task('build'), dependOn: ['a'] },
        { key: 'lint', run: { comand: 'make lint' }, verify: { function: 'v', retries: 2 } },
        { ...task('docs'), constructor: 'x' },
      ],
    };
    // As YAML.parse does, JSON.parse makes `__proto__` an own key rather than the prototype.
    const polluted = JSON.parse('{"tasks": [{"key": "a", "run": "x", "verify": "y"}], "repo": "r", "__proto__": {"base": "main"}}');
    expect(refusal(graph).problems).toEqual([
      "unknown key 'polcy' (did you mean 'policy'?)",
      "unknown key 'policy.maxAttempt' (did you mean 'policy.maxAttempts'?)",
      "task 'build': unknown key 'dependOn' (did you mean 'dependsOn'?)",
      "task 'lint': unknown key 'run.comand' (did you mean 'run.command'?)",
      "task 'lint': run must name exactly one of command, function or pool",
      "task 'lint': unknown key 'verify.retries'",
      "task 'docs': unknown key 'constructor'",
    ]);
    expect(refusal(polluted).problems).toEqual(["unknown key '__proto__'"]);
    expect(problems({ tasks: [{ key: 'a'.repeat(500), run: 'x', verify: 'y' }] })).toMatch(/task 'a{60}\.\.\.': key must match/);
  });

  it('reports every problem at once: a cycle, an unknown dependency, a wrong type and an unknown key together', () => {
    const error = refusal({
      id: 'sdk',
      tasks: [task('a', ['c']), task('b', ['a', 'ghost']), { ...task('c', ['b']), description: 42 }, { ...task('d'), verfy: 'npm test' }],
    });
    expect(error.problems).toEqual([
      "task 'c': description must be a non-empty string",
      "task 'd': unknown key 'verfy' (did you mean 'verify'?)",
      "task 'b': unknown dependency 'ghost'",
      'dependency cycle: a -> c -> b -> a',
    ]);
    // One line per problem, as `baton submit` prints it.
    expect(error.message).toBe(`invalid input: the graph has 4 problems:\n${error.problems.map((p) => `  - ${p}`).join('\n')}`);
    expect(error.details).toEqual({ problems: error.problems });
    expect(refusal({ tasks: [task('a')], repo: 5, polcy: {} }).problems).toEqual([
      "unknown key 'polcy' (did you mean 'policy'?)",
      'repo must be a non-empty string',
    ]);
    expect(problems({ tasks: [{ key: 'a', run: 'make' }] })).toMatch(/verify must name exactly one.*\n.*repo is required/);
  });

  it('reads a hole in a list (JavaScript `[,]`) as a missing item, not as no item (found by fuzzing)', () => {
    const hole = new Array<unknown>(1); // [,]: length 1, no item
    expect(problems({ tasks: hole })).toMatch('tasks[0] must be a mapping');
    expect(problems({ tasks: [{ ...task('a'), dependsOn: hole }] })).toMatch("task 'a': dependsOn must be a list of task keys");
    expect(problems({ tasks: [{ ...task('a'), tools: { allow: hole } }] })).toMatch("task 'a': tools.allow must be a list of tool names");
    expect(problems({ tasks: [{ ...task('a'), verify: { function: 'v', protect: hole } }] })).toMatch('verify.protect[0]');
  });

  it('gives every problem the path of the value it concerns, for a file reader to show its line', () => {
    const error = refusal({
      polcy: {},
      policy: { maxAttempts: 0, onUpstreamChange: 'ignore' },
      tasks: [
        task('a', ['c', 'ghost']),
        { key: 'b', dependsOn: ['a', 'b'], run: { function: 'f', comand: 'x' }, verify: { function: 'v', protect: ['../x'] } },
        task('c', ['b', 'a']),
        task('a', ['c']),
        5,
        { run: { function: 'f' } },
      ],
    });
    expect(error.graphProblems.map((p) => p.path)).toEqual([
      ['polcy'],
      ['policy', 'onUpstreamChange'],
      ['policy', 'maxAttempts'],
      ['tasks', 1, 'dependsOn', 1],
      ['tasks', 1, 'run', 'comand'],
      ['tasks', 1, 'verify', 'protect', 0],
      ['tasks', 3, 'key'],
      ['tasks', 4],
      ['tasks', 5, 'key'],
      ['tasks', 5, 'verify'],
      ['tasks', 0, 'dependsOn', 1],
      // Of two tasks with one key the cycle runs through the last: it starts at tasks[3] (a), its dependency on c.
      ['tasks', 3, 'dependsOn', 0],
    ]);
    expect(error.graphProblems.map((p) => p.message)).toEqual(error.problems);
    expect(error.problems.at(-1)).toBe('dependency cycle: a -> c -> b -> a');
    expect(refusal({ tasks: [{ key: 'a', run: 'make', verify: { function: 'v' } }] }).graphProblems).toEqual([
      { path: [], message: 'repo is required when a task runs a command (the command runner works in a git worktree of it)' },
    ]);
    expect(refusal([]).graphProblems).toEqual([{ path: [], message: 'a graph must be a mapping with a `tasks` list' }]);
  });

  it("keeps a task's tool allow-list and call budget (U11), and names each thing wrong with one, with its path", () => {
    const graph = parseGraphSpec({
      tasks: [
        { ...task('a'), tools: { allow: ['codehost', 'mailer'], maxCalls: 5, maxCost: 12.5 } },
        { ...task('b'), tools: null },
      ],
    });
    expect(graph.tasks.map((t) => t.spec.tools)).toEqual([{ allow: ['codehost', 'mailer'], maxCalls: 5, maxCost: 12.5 }, undefined]);
    const error = refusal({
      tasks: [
        { ...task('a'), tools: { allow: ['Codehost'], maxCalls: -1, budget: 3 } },
        { ...task('b'), tools: { allow: ['x', 'x'], maxCalls: 1.5, maxCost: -1 } },
        { ...task('c'), tools: ['codehost'] },
      ],
    });
    expect(error.graphProblems).toEqual([
      { path: ['tasks', 0, 'tools', 'budget'], message: "task 'a': unknown key 'tools.budget'" },
      {
        path: ['tasks', 0, 'tools', 'allow'],
        message: "task 'a': tools.allow must be a list of tool names matching /^[a-z0-9][a-z0-9_-]{0,62}$/",
      },
      { path: ['tasks', 0, 'tools', 'maxCalls'], message: "task 'a': tools.maxCalls must be an integer from 0 to 100000" },
      { path: ['tasks', 1, 'tools', 'allow'], message: "task 'b': tools.allow names a tool twice" },
      { path: ['tasks', 1, 'tools', 'maxCalls'], message: "task 'b': tools.maxCalls must be an integer from 0 to 100000" },
      { path: ['tasks', 1, 'tools', 'maxCost'], message: "task 'b': tools.maxCost must be a number from 0 to 1000000000000" },
      { path: ['tasks', 2, 'tools'], message: "task 'c': tools must be a mapping of allow, maxCalls and maxCost" },
    ]);
  });

  it("keeps a graph's maxRunning and a task's concurrency key (U11), and names each thing wrong with one", () => {
    const graph = parseGraphSpec({
      policy: { maxRunning: 4 },
      tasks: [{ ...task('a'), concurrency: { key: 'prod-db', limit: 1 } }, task('b')],
    });
    expect(graph.policy.maxRunning).toBe(4);
    expect(graph.tasks.map((t) => t.spec.concurrency)).toEqual([{ key: 'prod-db', limit: 1 }, undefined]);
    expect(parseGraphSpec({ tasks: [task('a')] }).policy).not.toHaveProperty('maxRunning');
    const error = refusal({
      policy: { maxRunning: 0 },
      tasks: [
        { ...task('a'), concurrency: { key: 'Prod DB', limit: 1 } },
        { ...task('b'), concurrency: { key: 'db', limit: 0, weight: 2 } },
        { ...task('c'), concurrency: 'db' },
      ],
    });
    const wrong = (key: string) =>
      `task '${key}': concurrency must be a mapping of key (matching /^[a-z0-9][a-z0-9_.:-]{0,62}$/) and limit (an integer from 1 to 10000)`;
    expect(error.graphProblems).toEqual([
      { path: ['policy', 'maxRunning'], message: 'policy.maxRunning must be an integer from 1 to 10000' },
      { path: ['tasks', 0, 'concurrency', 'key'], message: wrong('a') },
      { path: ['tasks', 1, 'concurrency', 'weight'], message: "task 'b': unknown key 'concurrency.weight'" },
      { path: ['tasks', 1, 'concurrency', 'limit'], message: wrong('b') },
      { path: ['tasks', 2, 'concurrency'], message: wrong('c') },
    ]);
  });

  it('keeps a JSON payload for the agent, and refuses one that Postgres could not store', () => {
    const graph = parseGraphSpec({ id: null, tasks: [{ ...task('a'), payload: { mode: 'always', n: [1, 2] } }] });
    expect(graph.id).toMatch(/^g-[0-9a-f]{8}$/);
    expect(graph.tasks[0]!.spec).toEqual({
      description: 'a',
      run: { function: 'f' },
      verify: { function: 'v' },
      payload: { mode: 'always', n: [1, 2] },
    });
    expect(problems({ tasks: [{ ...task('a'), payload: { at: new Date() } }] })).toMatch(/task 'a': payload.at is not JSON/);
    expect(problems({ tasks: [{ ...task('a'), payload: { ['a\0']: 1 } }] })).toMatch(/task 'a': payload contains a NUL character/);
    expect(problems({ tasks: [{ ...task('a'), description: 'a\0' }] })).toMatch(/task 'a': description contains a NUL character/);
    expect(
      problems({ tasks: [{ ...task('a'), run: { function: '\uD800' }, payload: ['\uDC00'] }] })
        .split('\n')
        .slice(1),
    ).toEqual([
      "  - task 'a': run.function contains a NUL character or an unpaired surrogate, which Postgres cannot store",
      "  - task 'a': payload contains a NUL character or an unpaired surrogate, which Postgres cannot store",
    ]);
    expect(parseGraphSpec({ tasks: [{ ...task('a'), payload: '\uD83D\uDE00' }] }).tasks[0]!.spec.payload).toBe('😀');
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(problems({ tasks: [{ ...task('a'), payload: deep }] })).toMatch(/task 'a': payload(\[0\])+ is nested more than 64 levels deep/);
    expect(problems({ policy: { onVerificationFailure: 10n }, tasks: [task('a')] })).toMatch(
      /onVerificationFailure must be 'rerun' or 'fail', not 10n$/,
    );
  });
});

describe('subtasks an agent proposes (U11)', () => {
  const problemsOf = (input: unknown) => {
    try {
      parseSubtasks(input);
    } catch (error) {
      return error instanceof InvalidGraphError ? error.problems : [(error as Error).message];
    }
    return [];
  };

  it('keeps what the agent may name, and depends on tasks outside the proposal by key', () => {
    expect(
      parseSubtasks([
        { key: 'docs', payload: { n: 1 }, dependsOn: ['plan'] },
        { key: 'more', description: 'more', dependsOn: ['docs'] },
      ]),
    ).toEqual([
      { key: 'docs', description: 'docs', payload: { n: 1 }, dependsOn: ['plan'] },
      { key: 'more', description: 'more', dependsOn: ['docs'] },
    ]);
    expect(parseGraphSpec({ policy: { subtasks: 'accept' }, tasks: [task('a')] }).policy.subtasks).toBe('accept');
  });

  it('names every problem: what the proposer decides, bad keys, cycles, unknown keys, the count', () => {
    expect(
      problemsOf([
        { key: 'a', verify: 'true', dependsOn: ['b'] },
        { key: 'b', run: { command: 'x' }, dependsOn: ['a'] },
        { key: 'Bad Key', tools: { allow: ['deploy'] }, concurrency: { key: 'k', limit: 1 }, colour: 'red' },
      ]),
    ).toEqual(
      expect.arrayContaining([
        "tasks[0]: a subtask runs and is verified as the task proposing it is; its verify is not the proposal's to set",
        "tasks[1]: a subtask runs and is verified as the task proposing it is; its run is not the proposal's to set",
        "tasks[2]: a subtask runs and is verified as the task proposing it is; its tools is not the proposal's to set",
        "tasks[2]: a subtask runs and is verified as the task proposing it is; its concurrency is not the proposal's to set",
        expect.stringMatching(/^dependency cycle: (a -> b -> a|b -> a -> b)$/),
        expect.stringContaining("task 'Bad Key': key must match"),
        "task 'Bad Key': unknown key 'colour'",
      ]),
    );
    expect(problemsOf([])).toEqual([`invalid input: give the subtasks as a list of 1 to ${MAX_SUBTASKS_PER_TASK} tasks`]);
    expect(problemsOf(Array.from({ length: MAX_SUBTASKS_PER_TASK + 1 }, (_, i) => ({ key: `t${i}` })))).toHaveLength(1);
    expect(problemsOf([{ key: 'a', dependsOn: ['a'] }])).toEqual(["task 'a': depends on itself"]);
  });

  it('takes a priority from 1 to 5, and refuses any other', () => {
    expect(parseGraphSpec({ policy: { priority: 1 }, tasks: [task('a')] }).policy.priority).toBe(1);
    expect(parseGraphSpec({ tasks: [task('a')] }).policy.priority).toBeUndefined();
    for (const bad of [0, 6, 2.5, 'high'])
      expect(() => parseGraphSpec({ policy: { priority: bad }, tasks: [task('a')] })).toThrow(
        'policy.priority must be an integer from 1 to 5',
      );
  });

  it('refuses a policy.subtasks it does not know, naming the three', () => {
    expect(() => parseGraphSpec({ policy: { subtasks: 'sometimes' }, tasks: [task('a')] })).toThrow(
      `policy.subtasks must be 'review', 'accept' or 'refuse', not "sometimes"`,
    );
  });
});
