// The JSON Schema of graph files (docs/graph.schema.json) against the parser: every graph the
// parser accepts fits the schema, and the mistakes a schema can see are refused by both.
import { readFile } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidGraphError } from '../../src/errors.js';
import { GRAPH_SCHEMA_PATH, graphJsonSchema } from '../../src/tasks/graphSchema.js';
import { HEARTBEAT_TIMEOUT_MS_RANGE, MAX_ATTEMPTS_RANGE, MAX_TEXT_LENGTH, parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { graphArb, mutate, mutationArb } from '../helpers/graphArbitraries.js';

// Each property runs in a few seconds on a quiet 2-core machine, and many times that on a busy one.
const NUM_RUNS = 300;

// Strict: a keyword ajv does not know, or a schema it would read otherwise than meant, fails compilation.
const fitsSchema = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true }).compile(graphJsonSchema());

/** Whether the parser accepts `graph`; anything but an InvalidGraphError fails the test. */
function parserAccepts(graph: unknown): boolean {
  try {
    parseGraphSpec(graph);
    return true;
  } catch (error) {
    if (!(error instanceof InvalidGraphError)) throw error;
    return false;
  }
}

const someText = fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== '');
/** A value or null, which the parser reads as absent where the schema says so. */
const orNull = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const runArb = fc.oneof(
  someText,
  fc.record({ command: someText, function: fc.constant(null), agent: orNull(someText) }, { requiredKeys: ['command'] }),
  fc.record({ function: someText, pool: fc.constant(null), agent: orNull(someText) }, { requiredKeys: ['function'] }),
  fc.record({ pool: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/), command: fc.constant(null) }, { requiredKeys: ['pool'] }),
);
const protectedPath = fc.constantFrom('test/**', 'package.json', './check.sh', 'docs/', '**/*.spec.ts');
const verifyArb = fc.oneof(
  someText,
  fc.record(
    { command: someText, function: fc.constant(null), protect: orNull(fc.array(protectedPath, { maxLength: 3 })) },
    { requiredKeys: ['command'] },
  ),
  fc.record({ function: someText, protect: fc.constant(null) }, { requiredKeys: ['function'] }),
);
/** Graphs that use every key, null where the parser allows it, and the limits at their bounds. */
const everyKeyGraphArb = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.record(
    {
      id: fc.constantFrom(null, 'g', 'a'.repeat(63)),
      repo: fc.constantFrom('/srv/repo', '../repo'),
      base: orNull(fc.constantFrom('main', 'HEAD~1')),
      policy: fc.record(
        {
          maxAttempts: fc.constantFrom(...MAX_ATTEMPTS_RANGE),
          heartbeatTimeoutMs: fc.constantFrom(...HEARTBEAT_TIMEOUT_MS_RANGE),
          onVerificationFailure: fc.constantFrom(null, 'rerun', 'fail'),
          onUpstreamChange: fc.constantFrom(null, 'rerun', 'mark'),
        },
        { requiredKeys: [] },
      ),
      tasks: fc.tuple(
        ...Array.from({ length: n }, (_, i) =>
          fc.record(
            {
              key: fc.constant(`t${i}`),
              dependsOn: orNull(fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`))),
              // At the limit in UTF-16 code units, which the parser counts; the schema counts code points.
              description: orNull(fc.constantFrom('x'.repeat(MAX_TEXT_LENGTH.description), '😀'.repeat(MAX_TEXT_LENGTH.description / 2))),
              run: runArb,
              verify: verifyArb,
              payload: fc.jsonValue({ maxDepth: 2 }),
            },
            { requiredKeys: ['key', 'run', 'verify'] },
          ),
        ),
      ),
    },
    { requiredKeys: ['repo', 'tasks'] },
  ),
);

/** A valid graph that uses every level; each refused case below changes one thing in it. */
const base = () => ({
  id: 'sdk',
  repo: '/srv/repo',
  policy: { maxAttempts: 3, heartbeatTimeoutMs: 10_000, onVerificationFailure: 'rerun', onUpstreamChange: 'mark' },
  tasks: [
    { key: 'a', run: { command: 'make', agent: 'builder' }, verify: { command: 'make test', protect: ['test/**'] } },
    { key: 'b', dependsOn: ['a'], run: { pool: 'reviewers' }, verify: 'make check' },
  ],
});

/** Each case: what it breaks, and how, in a fresh copy of `base()`. */
const REFUSED: Array<[string, (g: any) => void]> = [
  ['an unknown key at the top', (g) => (g.polcy = {})],
  ['an unknown key in the policy', (g) => (g.policy.maxAttempt = 2)],
  ['an unknown key in a task', (g) => (g.tasks[0].dependOn = ['b'])],
  ['an unknown key in a run', (g) => (g.tasks[0].run.comand = 'make')],
  ['an unknown key in a verify', (g) => (g.tasks[0].verify.pool = 'reviewers')],
  ['a task key with upper case', (g) => (g.tasks[0].key = 'A')],
  ['a task key of 64 characters', (g) => (g.tasks[0].key = 'a'.repeat(64))],
  ['a task key starting with -', (g) => (g.tasks[0].key = '-a')],
  ['an id with a blank', (g) => (g.id = 'my graph')],
  ['heartbeatTimeoutMs below its range', (g) => (g.policy.heartbeatTimeoutMs = HEARTBEAT_TIMEOUT_MS_RANGE[0] - 1)],
  ['heartbeatTimeoutMs above its range', (g) => (g.policy.heartbeatTimeoutMs = HEARTBEAT_TIMEOUT_MS_RANGE[1] + 1)],
  ['heartbeatTimeoutMs not whole', (g) => (g.policy.heartbeatTimeoutMs = 1_500.5)],
  ['heartbeatTimeoutMs as text', (g) => (g.policy.heartbeatTimeoutMs = '10000')],
  ['maxAttempts of 0', (g) => (g.policy.maxAttempts = 0)],
  ['an unknown onVerificationFailure', (g) => (g.policy.onVerificationFailure = 'shrug')],
  ['an unknown onUpstreamChange', (g) => (g.policy.onUpstreamChange = 'ignore')],
  ['a policy that is not a mapping', (g) => (g.policy = null)],
  ['no tasks', (g) => (g.tasks = [])],
  ['a task without verify', (g) => delete g.tasks[0].verify],
  ['a run naming two kinds', (g) => (g.tasks[0].run = { command: 'make', function: 'f' })],
  ['a run naming none', (g) => (g.tasks[0].run = { agent: 'builder' })],
  ['a pooled run naming its agent', (g) => (g.tasks[1].run.agent = 'me')],
  ['a pool name with upper case', (g) => (g.tasks[1].run.pool = 'Reviewers')],
  ['a blank command', (g) => (g.tasks[1].verify = '  ')],
  ['a description too long', (g) => (g.tasks[0].description = 'x'.repeat(MAX_TEXT_LENGTH.description + 1))],
  ['a dependency named twice', (g) => (g.tasks[1].dependsOn = ['a', 'a'])],
  ['dependsOn that is not a list', (g) => (g.tasks[1].dependsOn = 'a')],
  ['protect that is not a list', (g) => (g.tasks[0].verify.protect = 'test/**')],
];

describe('the JSON Schema of graph files', () => {
  it('is checked in as generated: run `npx tsx scripts/writeGraphSchema.ts` after changing it', async () => {
    expect(JSON.parse(await readFile(GRAPH_SCHEMA_PATH, 'utf8'))).toEqual(graphJsonSchema());
  });

  it('fits graphs that use every key, null where the parser allows it, and the limits at their bounds', () => {
    fc.assert(
      fc.property(everyKeyGraphArb, (graph) => {
        expect(parserAccepts(graph), JSON.stringify(graph)).toBe(true);
        expect(fitsSchema(graph), JSON.stringify(fitsSchema.errors)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("fits every graph of the parser's fuzz tests that the parser accepts, broken on purpose or not", () => {
    let accepted = 0;
    const fitsIfAccepted = (graph: unknown) => {
      if (!parserAccepts(graph)) return;
      accepted++;
      expect(fitsSchema(graph), JSON.stringify(fitsSchema.errors)).toBe(true);
    };
    fc.assert(fc.property(graphArb, fitsIfAccepted), { numRuns: NUM_RUNS });
    // The property says nothing unless the parser accepts a fair share of these (about a third).
    expect(accepted).toBeGreaterThan(NUM_RUNS / 10);
    // Few broken graphs pass, and each takes long to make: fewer runs.
    fc.assert(
      fc.property(graphArb, fc.array(mutationArb, { minLength: 1, maxLength: 2 }), (graph, mutations) => {
        const input = structuredClone(graph) as Record<string, unknown>;
        for (const m of mutations) mutate(input, m);
        fitsIfAccepted(input);
      }),
      { numRuns: NUM_RUNS / 3 },
    );
  });

  it.each(REFUSED)('refuses %s, as the parser does', (_, breakIt) => {
    expect(parserAccepts(base())).toBe(true);
    expect(fitsSchema(base()), JSON.stringify(fitsSchema.errors)).toBe(true);
    const graph = base();
    breakIt(graph);
    expect(parserAccepts(graph)).toBe(false);
    expect(fitsSchema(graph)).toBe(false);
  });
});
