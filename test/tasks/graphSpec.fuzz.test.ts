// Fuzzing the graph parser (S3, T8): random values and valid graphs broken on purpose. Whatever
// comes in, the parser returns a valid graph or throws InvalidGraphError, and the store writes
// every graph the parser accepts.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { graphRead } from '../../src/db/sql/reads.js';
import { InvalidGraphError } from '../../src/errors.js';
import { findCycle, MAX_ATTEMPTS_RANGE, MAX_TASK_SPEC_BYTES, parseGraphSpec, type GraphSpec } from '../../src/tasks/graphSpec.js';
import { useTestDatabase } from '../helpers/db.js';
import { anything, at, graphArb, mappings, mutate, mutationArb, type Path } from '../helpers/graphArbitraries.js';

const db = useTestDatabase();

// Each property runs in a few seconds on a quiet 2-core machine, and many times that on a busy one.
const NUM_RUNS = 300;

const KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** A key as the parser names it in a problem, without the task's own prefix. */
const named = (path: Path, key: string) => (path[0] === 'policy' ? `policy.${key}` : path.length === 3 ? `${path[2]}.${key}` : key);

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
