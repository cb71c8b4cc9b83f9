// Fuzzing the graph parser (S3, T8): random values and valid graphs broken on purpose. Whatever
// comes in, the parser returns a valid graph or throws InvalidGraphError, and the store writes
// every graph the parser accepts.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { graphRead } from '../../src/db/sql/reads.js';
import { InvalidGraphError } from '../../src/errors.js';
import {
  findCycle,
  HEARTBEAT_TIMEOUT_MS_RANGE,
  MAX_ATTEMPTS_RANGE,
  MAX_TASK_SPEC_BYTES,
  MAX_TASKS_PER_GRAPH,
  parseGraphSpec,
  type GraphSpec,
} from '../../src/tasks/graphSpec.js';
import { useTestDatabase } from '../helpers/db.js';

const db = useTestDatabase();

// Each property runs in a few seconds on a quiet 2-core machine, and many times that on a busy one.
const NUM_RUNS = 300;

const KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Keys an attacker or a typo might use; none of them is a key of a graph spec. */
const ODD_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'polcy',
  'comand',
  'dependOn',
  'depends_on',
  'Tasks',
  'key ',
  '',
];

/** Text of every kind: control characters (NUL too), lone surrogates, emoji, blanks. */
const anyText = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' \n', '\0', 'a\0b', '\uD800', 'x\uDC00', '\uD83D\uDE00') },
);
const anyKey = fc.oneof(fc.constantFrom(...ODD_KEYS), fc.string({ unit: 'binary', maxLength: 12 }));
/** Any JavaScript value a caller might pass: BigInt, Map, Date, null-prototype objects, sparse arrays ... */
const anything = fc.anything({
  key: anyKey,
  maxDepth: 4,
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
  withTypedArray: true,
  stringUnit: 'binary',
});

const stepArb = fc.oneof(anyText, fc.record({ command: anyText }), fc.record({ function: fc.constantFrom('f', 'noop', 'pass') }));

/** A valid-looking graph: a random DAG whose tasks carry random text, steps and payloads. */
const graphArb = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record(
    {
      id: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/),
      repo: fc.constant('/srv/repo'),
      base: fc.constantFrom('HEAD', 'main'),
      policy: fc.record(
        {
          maxAttempts: fc.integer({ min: MAX_ATTEMPTS_RANGE[0], max: MAX_ATTEMPTS_RANGE[1] }),
          onVerificationFailure: fc.constantFrom('rerun', 'fail'),
          onUpstreamChange: fc.constantFrom('rerun', 'mark'),
          heartbeatTimeoutMs: fc.integer({ min: HEARTBEAT_TIMEOUT_MS_RANGE[0], max: HEARTBEAT_TIMEOUT_MS_RANGE[1] }),
        },
        { requiredKeys: [] },
      ),
      tasks: fc.tuple(
        ...Array.from({ length: n }, (_, i) =>
          fc.record(
            {
              key: fc.constant(`t${i}`),
              description: anyText,
              dependsOn: fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`)),
              run: stepArb,
              verify: stepArb,
              payload: fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }),
            },
            { requiredKeys: ['key', 'run', 'verify'] },
          ),
        ),
      ),
    },
    { requiredKeys: ['tasks'] },
  ),
);

type Path = (string | number)[];

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value));
/** The graph's tasks that are still mappings (an earlier mutation may have replaced any of them). */
const tasksOf = (graph: Record<string, unknown>) => (Array.isArray(graph.tasks) ? graph.tasks.filter(isMapping) : []);

/** Paths to every mapping of a graph where a key can be renamed or a value replaced. */
function mappings(graph: Record<string, unknown>): Path[] {
  const paths: Path[] = [[]];
  if (isMapping(graph.policy)) paths.push(['policy']);
  if (!Array.isArray(graph.tasks)) return paths;
  graph.tasks.forEach((t: unknown, i) => {
    if (!isMapping(t)) return;
    paths.push(['tasks', i]);
    for (const step of ['run', 'verify']) if (isMapping(t[step])) paths.push(['tasks', i, step]);
  });
  return paths;
}

const at = (root: unknown, path: Path) => path.reduce<any>((value, key) => value[key], root);
/** A key as the parser names it in a problem, without the task's own prefix. */
const named = (path: Path, key: string) => (path[0] === 'policy' ? `policy.${key}` : path.length === 3 ? `${path[2]}.${key}` : key);

/** One way to break a graph, applied to a deep copy. */
type Mutation =
  | { kind: 'renameKey'; pick: number; to: string }
  | { kind: 'replaceValue'; pick: number; with: unknown }
  | { kind: 'addDependency'; from: number; to: number }
  | { kind: 'nest'; depth: number }
  | { kind: 'hugeString'; bytes: number }
  | { kind: 'longChain'; length: number; closed: boolean; reversed: boolean };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('renameKey' as const), pick: fc.nat(), to: anyKey }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('replaceValue' as const), pick: fc.nat(), with: anything }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('addDependency' as const), from: fc.nat(), to: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('nest' as const), depth: fc.integer({ min: 1, max: 20_000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('hugeString' as const), bytes: fc.integer({ min: 1_000, max: 2_000_000 }) }) },
  // Rarer: a 10,000-task graph takes a while to build and check.
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('longChain' as const),
      length: fc.integer({ min: 2, max: MAX_TASKS_PER_GRAPH }),
      closed: fc.boolean(),
      reversed: fc.boolean(),
    }),
  },
);

function mutate(graph: Record<string, unknown>, mutation: Mutation): void {
  const tasks = tasksOf(graph);
  const paths = mappings(graph);
  const target = at(graph, paths[((mutation as { pick?: number }).pick ?? 0) % paths.length]!) as Record<string, unknown>;
  const keys = Object.keys(target);
  switch (mutation.kind) {
    case 'renameKey': {
      const from = keys[mutation.pick % keys.length];
      if (from === undefined) return;
      const value = target[from];
      delete target[from];
      Object.defineProperty(target, mutation.to, { value, enumerable: true, configurable: true, writable: true });
      return;
    }
    case 'replaceValue': {
      const key = keys[mutation.pick % keys.length];
      if (key !== undefined) target[key] = mutation.with;
      return;
    }
    case 'addDependency': {
      // May close a cycle (to a later task), name the task itself, or repeat a dependency.
      const task = tasks[mutation.from % tasks.length];
      if (!task) return;
      task.dependsOn = [...(Array.isArray(task.dependsOn) ? task.dependsOn : []), `t${mutation.to % (tasks.length + 1)}`];
      return;
    }
    case 'nest': {
      let deep: unknown = 'bottom';
      for (let i = 0; i < mutation.depth; i++) deep = i % 2 ? [deep] : { d: deep };
      if (tasks[0]) tasks[0].payload = deep;
      return;
    }
    case 'hugeString':
      if (tasks[0]) tasks[0].description = 'x'.repeat(mutation.bytes);
      return;
    case 'longChain': {
      // Each task depends on the one before; the longest path is as long as the graph allows.
      const chain = Array.from({ length: mutation.length }, (_, i) => ({
        key: `c${i}`,
        dependsOn: i > 0 ? [`c${i - 1}`] : mutation.closed ? [`c${mutation.length - 1}`] : [],
        run: { function: 'f' },
        verify: { function: 'v' },
      }));
      graph.tasks = mutation.reversed ? chain.reverse() : chain;
    }
  }
}

/** What a graph the parser accepts must satisfy (as plain checks: a graph may have 10,000 tasks). */
function expectValid(graph: GraphSpec): void {
  const keys = new Set(graph.tasks.map((t) => t.key));
  const broken = (t: GraphSpec['tasks'][number]) =>
    !KEY_PATTERN.test(t.key) ||
    t.dependsOn.some((d) => !keys.has(d)) ||
    [t.spec.run, t.spec.verify].some((step) => Object.keys(step).length !== 1) ||
    Buffer.byteLength(JSON.stringify(t.spec)) > MAX_TASK_SPEC_BYTES;
  expect(graph.id).toMatch(KEY_PATTERN);
  expect(keys.size).toBe(graph.tasks.length);
  expect(graph.tasks.find(broken)).toBeUndefined();
  expect(findCycle(graph.tasks)).toBeUndefined();
  expect(graph.policy.maxAttempts).toBeGreaterThanOrEqual(MAX_ATTEMPTS_RANGE[0]);
}

/** Parses `input`: the graph, or the refusal's problems; anything else thrown fails the property. */
function parse(input: unknown): { graph: GraphSpec } | { problems: readonly string[] } {
  try {
    const graph = parseGraphSpec(input);
    expectValid(graph);
    return { graph };
  } catch (error) {
    if (!(error instanceof InvalidGraphError)) throw error;
    expect(error.problems.length).toBeGreaterThan(0);
    for (const p of error.problems) expect(error.message).toContain(p);
    return { problems: error.problems };
  }
}

describe('fuzzing the graph parser (S3, T8)', () => {
  it('returns a valid graph or an InvalidGraphError for any value at all', () => {
    fc.assert(
      fc.property(
        fc.oneof(anything, fc.record({ tasks: anything }), fc.record({ tasks: fc.array(anything) })),
        (input) => void parse(input),
      ),
      {
        numRuns: NUM_RUNS,
      },
    );
  });

  it('returns a valid graph or an InvalidGraphError for valid graphs broken in every way at once', () => {
    fc.assert(
      fc.property(graphArb, fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (graph, mutations) => {
        const input = structuredClone(graph) as Record<string, unknown>;
        for (const m of mutations) mutate(input, m);
        parse(input);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('names every unknown key it is given, wherever it is, all in one refusal', () => {
    fc.assert(
      fc.property(graphArb, fc.array(fc.nat(), { minLength: 1, maxLength: 5 }), (graph, picks) => {
        const input = structuredClone(graph) as Record<string, unknown>;
        const paths = mappings(input);
        const expected = picks.map((pick, i) => {
          const path = paths[pick % paths.length]!;
          const key = `zz${i}`;
          at(input, path)[key] = 1;
          return { task: path[0] === 'tasks' ? `task 't${path[1]}': ` : '', key: named(path, key) };
        });
        const result = parse(input);
        expect(result).toHaveProperty('problems');
        const { problems } = result as { problems: readonly string[] };
        for (const e of expected)
          expect(
            problems.some((p) => p.startsWith(`${e.task}unknown key '${e.key}'`)),
            `${e.key} in ${problems.join('\n')}`,
          ).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('writes every graph it accepts: nothing it lets through is refused by the store', async () => {
    await fc.assert(
      fc.asyncProperty(graphArb, async (graph) => {
        const result = parse({ ...graph, id: `fz-${randomUUID()}` });
        if (!('graph' in result)) return;
        await graphSubmit(db.pool, result.graph, 'fuzz');
        expect((await graphRead(db.pool, result.graph.id)).tasks).toHaveLength(result.graph.tasks.length);
      }),
      { numRuns: 60 },
    );
  });
});
