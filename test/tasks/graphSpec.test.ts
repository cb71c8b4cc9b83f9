import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/errors.js';
import { findCycle, MAX_TASKS_PER_GRAPH, parseGraphSpec } from '../../src/tasks/graphSpec.js';

const task = (key: string, dependsOn: string[] = []) => ({ key, dependsOn, run: { function: 'f' }, verify: { function: 'v' } });
const problems = (input: unknown) => {
  try {
    parseGraphSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error('expected the graph to be refused');
};

describe('graph validation (T8)', () => {
  it('fills in defaults for a valid graph', () => {
    const graph = parseGraphSpec({ id: 'sdk', tasks: [task('a'), task('b', ['a'])] });
    expect(graph).toMatchObject({ id: 'sdk', base: 'HEAD', policy: { maxAttempts: 3, onVerificationFailure: 'rerun', heartbeatTimeoutMs: 10_000 } });
    expect(graph.tasks.map((t) => [t.key, t.dependsOn])).toEqual([['a', []], ['b', ['a']]]);
  });

  it('names an unknown dependency, a duplicate key and a self-dependency, all at once', () => {
    const message = problems({ tasks: [task('a', ['ghost']), task('a'), task('c', ['c'])] });
    expect(message).toMatch(/task 'a': duplicate key/);
    expect(message).toMatch(/task 'a': unknown dependency 'ghost'/);
    expect(message).toMatch(/task 'c': depends on itself/);
  });

  it('shows the cycle', () => {
    expect(problems({ tasks: [task('a', ['c']), task('b', ['a']), task('c', ['b'])] })).toMatch(/dependency cycle: a -> c -> b -> a/);
    expect(findCycle([{ key: 'x', dependsOn: [] }])).toBeUndefined();
  });

  it('refuses oversized graphs and specs', () => {
    const many = Array.from({ length: MAX_TASKS_PER_GRAPH + 1 }, (_, i) => task(`t${i}`));
    expect(problems({ tasks: many })).toMatch(/at most 10000 tasks/);
    expect(problems({ tasks: [{ ...task('long'), description: 'x'.repeat(2_001) }] })).toMatch(/longer than 2000 characters/);
    expect(problems({ tasks: [{ ...task('big'), notes: 'x'.repeat(70_000) }] })).toMatch(/task 'big': spec is larger than 65536 bytes/);
  });

  it('requires a verification for every task and a repo for commands', () => {
    expect(problems({ tasks: [{ key: 'a', run: { function: 'f' } }] })).toMatch(/verify must name exactly one of command or function/);
    expect(problems({ tasks: [{ key: 'a', run: 'make', verify: 'make test' }] })).toMatch(/repo is required/);
  });

  it('refuses bad keys, ids and policies with specific messages', () => {
    expect(problems({ id: 'Not Valid', tasks: [task('a')] })).toMatch(/id 'Not Valid' must match/);
    expect(problems({ tasks: [task('UPPER')] })).toMatch(/task 'UPPER': key must match/);
    expect(problems({ policy: { maxAttempts: 0, onVerificationFailure: 'shrug' }, tasks: [task('a')] })).toMatch(
      /policy.onVerificationFailure must be 'rerun' or 'fail'.*policy.maxAttempts must be an integer from 1 to 100|policy.maxAttempts must be an integer from 1 to 100.*onVerificationFailure/,
    );
    expect(problems({ policy: { heartbeatTimeoutMs: 2 ** 31 }, tasks: [task('a')] })).toMatch(/heartbeatTimeoutMs must be an integer from 1000 to 3600000/);
    expect(problems('tasks: []')).toMatch(/a graph must be a mapping/);
    expect(problems({ tasks: [] })).toMatch(/tasks must be a non-empty list/);
  });
});
