// A graph defined in TypeScript is the graph a file could describe, its functions registered by
// name. test/examples/examples.test.ts runs one on a real worker.
import { describe, expect, it } from 'vitest';
import { InvalidGraphError, InvalidInputError } from '../src/errors.js';
import { defineFunctionGraph } from '../src/functionGraph.js';
import type { AgentFunction, VerifierFunction } from '../src/runners/functionRunner.js';
import { parseGraphSpec } from '../src/tasks/graphSpec.js';

const agent: AgentFunction = async () => ({ revision: 'r', testCommand: 'c', agentResult: { exitCode: 0, outputDigest: 'd' } });
const otherAgent: AgentFunction = async () => ({ revision: 'r2', testCommand: 'c', agentResult: { exitCode: 0, outputDigest: 'd' } });
const verifier: VerifierFunction = async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' });

describe('defineFunctionGraph', () => {
  const graph = defineFunctionGraph({
    name: 'sdk',
    policy: { maxAttempts: 2 },
    tasks: {
      request: { description: 'request construction', run: agent, verify: verifier },
      tests: { dependsOn: ['request'], run: otherAgent, verify: verifier },
    },
  });

  it('is a graph whose tasks name their functions `<name>/<key>`, with the payloads and id it is given', () => {
    const spec = parseGraphSpec(graph.input({ id: 'sdk-1', payloads: { tests: { suite: 'migration' } } }));
    expect(spec).toMatchObject({ id: 'sdk-1', policy: { maxAttempts: 2, onVerificationFailure: 'rerun' } });
    expect(spec.tasks).toEqual([
      {
        key: 'request',
        dependsOn: [],
        spec: { description: 'request construction', run: { function: 'sdk/request' }, verify: { function: 'sdk/request' } },
      },
      {
        key: 'tests',
        dependsOn: ['request'],
        spec: { description: 'tests', run: { function: 'sdk/tests' }, verify: { function: 'sdk/tests' }, payload: { suite: 'migration' } },
      },
    ]);
  });

  it('gives each graph an id of its own, after its name', () => {
    const [a, b] = [graph.input().id, graph.input().id];
    expect(a).toMatch(/^sdk-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
  });

  it('registers each function under the name its task uses', () => {
    expect(graph.functions.agentFunctions).toEqual({ 'sdk/request': agent, 'sdk/tests': otherAgent });
    expect(graph.functions.verifierFunctions).toEqual({ 'sdk/request': verifier, 'sdk/tests': verifier });
  });

  it('refuses a cycle and a bad name when it is defined', () => {
    const cyclic = () =>
      defineFunctionGraph({
        name: 'loop',
        tasks: { a: { dependsOn: ['b'], run: agent, verify: verifier }, b: { dependsOn: ['a'], run: agent, verify: verifier } },
      });
    expect(cyclic).toThrow(InvalidGraphError);
    expect(cyclic).toThrow(/dependency cycle: a -> b -> a/);
    expect(() => defineFunctionGraph({ name: 'Not A Key', tasks: { a: { run: agent, verify: verifier } } })).toThrow(InvalidInputError);
    // Room for `-<8 hex digits>` in a graph id of at most 63 characters.
    expect(() => defineFunctionGraph({ name: 'n'.repeat(54), tasks: { a: { run: agent, verify: verifier } } })).not.toThrow();
    expect(() => defineFunctionGraph({ name: 'n'.repeat(55), tasks: { a: { run: agent, verify: verifier } } })).toThrow(
      /at most 54 characters/,
    );
  });

  it('names only its own tasks as dependencies, which the compiler checks', () => {
    const typo = () =>
      defineFunctionGraph({
        name: 'typo',
        // @ts-expect-error 'reqest' is not a task of this graph
        tasks: { request: { run: agent, verify: verifier }, tests: { dependsOn: ['reqest'], run: agent, verify: verifier } },
      });
    expect(typo).toThrow(/unknown dependency 'reqest'/);
  });
});
