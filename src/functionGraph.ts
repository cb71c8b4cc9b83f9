import { randomUUID } from 'node:crypto';
import { InvalidInputError } from './errors.js';
import type { Json } from './json.js';
import type { AgentFunction, VerifierFunction } from './runners/functionRunner.js';
import { KEY_PATTERN, parseGraphSpec, type GraphPolicy } from './tasks/graphSpec.js';

/** Hex digits after a function graph's name in the ids of its graphs (`<name>-<random>`). */
const GRAPH_ID_SUFFIX_HEX = 8;

/** One task of a graph defined in TypeScript: the function that does the work and the one that checks it. */
export interface FunctionTask<Key extends string> {
  /** One line for people. (Default: the task's key) */
  description?: string;
  /** The tasks whose verified artifacts this one builds on; it is released when all are verified (T8). (Default: none) */
  dependsOn?: readonly Key[];
  /** The agent: does the work of one claim and returns its artifact. */
  run: AgentFunction;
  /** Checks the artifact; it sees the artifact, never the agent (T7). */
  verify: VerifierFunction;
}

export interface FunctionGraphDefinition<Key extends string> {
  /**
   * Names the graph's functions on the worker (`<name>/<task key>`), and its graphs
   * (`<name>-<random>`): lower case, digits, `-` and `_`, at most 54 characters. Keep it stable: a
   * graph in Postgres names its functions, and a worker runs it only if it registers those names.
   */
  name: string;
  /** (Default: the defaults of a graph file's `policy`) */
  policy?: Partial<GraphPolicy>;
  /** The tasks by key; `dependsOn` may name only these keys. */
  tasks: { [K in Key]: FunctionTask<NoInfer<Key>> };
}

/** What a worker registers to run a function graph: spread it into `createBatonPlugin` or `createBatonWorker` options. */
export interface GraphFunctions {
  agentFunctions: Record<string, AgentFunction>;
  verifierFunctions: Record<string, VerifierFunction>;
}

/** A function graph as graph input: what a graph file with `run: { function }` and `verify: { function }` holds. */
export interface FunctionGraphInput {
  id: string;
  policy?: Partial<GraphPolicy>;
  tasks: {
    key: string;
    description?: string;
    dependsOn: string[];
    run: { function: string };
    verify: { function: string };
    payload?: Json;
  }[];
}

export interface FunctionGraph<Key extends string> {
  readonly name: string;
  readonly functions: GraphFunctions;
  /**
   * One graph of these tasks, as input for the client's `submitGraph` (the same graph a YAML file
   * could describe, its tasks naming the registered functions). `payloads` gives tasks their input,
   * read by the agent as `ctx.claim.spec.payload`. (Default id: `<name>-<8 random hex digits>`)
   */
  input(options?: { id?: string; payloads?: Partial<Record<Key, Json>> }): FunctionGraphInput;
}

/**
 * T10: a graph whose agents and verifiers are functions of the caller's, defined once in
 * TypeScript and shared by the code that submits it and the workers that run it. Its structure is
 * checked here, as `submitGraph` checks it (unknown dependency, cycle, key rules): an
 * InvalidGraphError as soon as the module defining it loads.
 */
export function defineFunctionGraph<Key extends string>(definition: FunctionGraphDefinition<Key>): FunctionGraph<Key> {
  const { name, policy } = definition;
  // A name is good when the ids of its graphs are: a graph id's rules (KEY_PATTERN), with room for the suffix.
  if (!KEY_PATTERN.test(`${name}-${'0'.repeat(GRAPH_ID_SUFFIX_HEX)}`))
    throw new InvalidInputError(
      `function graph name '${name}' must be lower case letters, digits, - and _, starting with a letter or digit, at most 54 characters`,
    );
  const tasks = Object.entries<FunctionTask<Key>>(definition.tasks).map(([key, task]) => ({ key, ...task }));
  const functionName = (key: string) => `${name}/${key}`;
  const input: FunctionGraph<Key>['input'] = (options = {}) =>
    graphInput(options.id ?? `${name}-${randomUUID().slice(0, GRAPH_ID_SUFFIX_HEX)}`, policy, tasks, functionName, options.payloads ?? {});
  parseGraphSpec(input());
  return {
    name,
    functions: {
      agentFunctions: Object.fromEntries(tasks.map((t) => [functionName(t.key), t.run])),
      verifierFunctions: Object.fromEntries(tasks.map((t) => [functionName(t.key), t.verify])),
    },
    input,
  };
}

function graphInput(
  id: string,
  policy: Partial<GraphPolicy> | undefined,
  tasks: ({ key: string } & FunctionTask<string>)[],
  functionName: (key: string) => string,
  payloads: Partial<Record<string, Json>>,
): FunctionGraphInput {
  return {
    id,
    ...(policy ? { policy } : {}),
    tasks: tasks.map((t) => ({
      key: t.key,
      ...(t.description === undefined ? {} : { description: t.description }),
      dependsOn: [...(t.dependsOn ?? [])],
      run: { function: functionName(t.key) },
      verify: { function: functionName(t.key) },
      ...(payloads[t.key] === undefined ? {} : { payload: payloads[t.key] }),
    })),
  };
}
