// Arbitraries for graph specs (fast-check), shared by the parser's fuzz tests and the schema's:
// valid-looking graphs, and the ways to break them.
import fc from 'fast-check';
import { HEARTBEAT_TIMEOUT_MS_RANGE, MAX_ATTEMPTS_RANGE, MAX_TASKS_PER_GRAPH } from '../../src/tasks/graphSpec.js';

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
export const anything = fc.anything({
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
export const graphArb = fc.integer({ min: 1, max: 6 }).chain((n) =>
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

export type Path = (string | number)[];

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value));
/** The graph's tasks that are still mappings (an earlier mutation may have replaced any of them). */
const tasksOf = (graph: Record<string, unknown>) => (Array.isArray(graph.tasks) ? graph.tasks.filter(isMapping) : []);

/** Paths to every mapping of a graph where a key can be renamed or a value replaced. */
export function mappings(graph: Record<string, unknown>): Path[] {
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

export const at = (root: unknown, path: Path) => path.reduce<any>((value, key) => value[key], root);

/** One way to break a graph, applied to a deep copy. */
type Mutation =
  | { kind: 'renameKey'; pick: number; to: string }
  | { kind: 'replaceValue'; pick: number; with: unknown }
  | { kind: 'addDependency'; from: number; to: number }
  | { kind: 'nest'; depth: number }
  | { kind: 'hugeString'; bytes: number }
  | { kind: 'longChain'; length: number; closed: boolean; reversed: boolean };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('renameKey' as const), pick: fc.nat(), to: anyKey }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('replaceValue' as const), pick: fc.nat(), with: anything }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('addDependency' as const), from: fc.nat(), to: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('nest' as const), depth: fc.integer({ min: 1, max: 20_000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('hugeString' as const), bytes: fc.integer({ min: 1_000, max: 2_000_000 }) }) },
  // Rarer: a graph of the most tasks takes a while to build and check.
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

export function mutate(graph: Record<string, unknown>, mutation: Mutation): void {
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
