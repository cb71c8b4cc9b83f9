// The JSON Schema of a graph file (docs/graph.schema.json, written by scripts/writeGraphSchema.ts),
// for editors: completion, descriptions and the mistakes a schema can see. It is built from the
// parser's own keys and limits, and a test checks that every graph the parser accepts fits it.
// What a schema cannot say (unknown dependencies, cycles, duplicate keys, a repo for commands,
// sizes in bytes, text Postgres cannot store) only `baton validate` and `baton submit` check.
import {
  APPROVAL_TIMEOUT_MS_RANGE,
  APPROVAL_TIMEOUT_POLICIES,
  CONCURRENCY_KEY_PATTERN,
  CONCURRENCY_LIMIT_RANGE,
  HEARTBEAT_TIMEOUT_MS_DEFAULT,
  HEARTBEAT_TIMEOUT_MS_RANGE,
  KEY_PATTERN,
  MAX_ATTEMPTS_DEFAULT,
  MAX_ALLOWED_TOOLS,
  MAX_ATTEMPTS_RANGE,
  MAX_CALLS_RANGE,
  MAX_COST_RANGE,
  MAX_DEPENDENCIES_PER_TASK,
  MAX_PROTECTED_PATHS,
  MAX_TASKS_PER_GRAPH,
  MAX_TEXT_LENGTH,
  POOL_PATTERN,
  TOOL_NAME_PATTERN,
  PRIORITY_DEFAULT,
  PRIORITY_RANGE,
  SUBTASK_POLICIES,
  UPSTREAM_CHANGE_POLICIES,
  VERIFICATION_FAILURE_POLICIES,
  type GraphPolicy,
  type GraphSpec,
} from './graphSpec.js';
import type { TaskApproval, TaskConcurrency, TaskSpec, TaskTools } from './types.js';

/** Where the schema is checked in, relative to the repository's top; a test keeps it current. */
export const GRAPH_SCHEMA_PATH = 'docs/graph.schema.json';

type Schema = Record<string, unknown>;

/** A string with something other than blanks in it; `nullable`: null too, which the parser reads as absent. */
function text(description: string, options: { maxLength?: number; nullable?: boolean } = {}): Schema {
  return {
    type: options.nullable ? ['string', 'null'] : 'string',
    pattern: '\\S',
    ...(options.maxLength === undefined ? {} : { maxLength: options.maxLength }),
    description,
  };
}

/** One of `choices`; null reads as the first, the default. */
const choice = (choices: readonly string[], description: string): Schema => ({
  enum: [...choices, null],
  default: choices[0],
  description,
});

/** Of the `kinds` of a step, exactly one is given (not null). */
const exactlyOne = (kinds: string[]): { oneOf: Schema[] } => ({
  oneOf: kinds.map((kind) => ({ required: [kind], properties: { [kind]: { type: 'string' } } })),
});

const COMMAND = 'A shell command line; the graph then needs a `repo`.';
const FUNCTION = 'A function registered with the worker, by name.';

/** The JSON Schema (draft 2020-12) of a graph file, YAML or JSON. */
export function graphJsonSchema(): Schema {
  const key = { type: 'string', pattern: KEY_PATTERN.source };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'baton task graph',
    description:
      'A graph of tasks for baton: `baton validate <file>` checks it offline, `baton submit <file>` writes and starts it. ' +
      'Unknown keys are refused by name.',
    type: 'object',
    additionalProperties: false,
    required: ['tasks'],
    properties: {
      id: { ...key, type: ['string', 'null'], description: "The graph's id: lower case, digits, - and _. (Default: generated)" },
      repo: text(
        'Git repository the command runner and verifier work in; required when a task runs a command. ' +
          'A path (absolute or relative to this file) serves workers on one machine; a remote URL (file, git, ssh, http, https, or host:path) ' +
          'serves many: each worker keeps a mirror of it and reaches it with its own credentials, never written here.',
        { nullable: true },
      ),
      base: { ...text('Revision the first tasks start from.', { nullable: true }), default: 'HEAD' },
      policy: {
        type: 'object',
        additionalProperties: false,
        description: "How the graph's tasks are retried, verified and recovered.",
        properties: {
          maxAttempts: {
            type: 'integer',
            minimum: MAX_ATTEMPTS_RANGE[0],
            maximum: MAX_ATTEMPTS_RANGE[1],
            default: MAX_ATTEMPTS_DEFAULT,
            description:
              'Runs of one task on one set of inputs, counting reruns after rejection and reclaims after silence; ' +
              "an operator's rerun or one for an upstream change starts a fresh count.",
          },
          onVerificationFailure: choice(
            VERIFICATION_FAILURE_POLICIES,
            'After a rejected verification: run the agent again (`rerun`) or fail the task.',
          ),
          heartbeatTimeoutMs: {
            type: 'integer',
            minimum: HEARTBEAT_TIMEOUT_MS_RANGE[0],
            maximum: HEARTBEAT_TIMEOUT_MS_RANGE[1],
            default: HEARTBEAT_TIMEOUT_MS_DEFAULT,
            description: 'Owner silence that starts recovery, in ms.',
          },
          onUpstreamChange: choice(
            UPSTREAM_CHANGE_POLICIES,
            'When an upstream task is verified at a new revision, its dependents built on the old one are stale: run them again on ' +
              'the new revisions and verify them without a person (`rerun`), or leave them stale until `baton rerun` (`mark`).',
          ),
          maxRunning: {
            type: ['integer', 'null'],
            minimum: CONCURRENCY_LIMIT_RANGE[0],
            maximum: CONCURRENCY_LIMIT_RANGE[1],
            description: "At most this many of the graph's tasks running at once; the others wait for a place. (Default: no limit)",
          },
          subtasks: choice(
            SUBTASK_POLICIES,
            "Subtasks a running task's agent proposes: wait for an operator to accept or decline them (`review`), are added at " +
              'once (`accept`), or are refused (`refuse`). A subtask runs and is verified as its proposer is.',
          ),
          priority: {
            type: ['integer', 'null'],
            minimum: PRIORITY_RANGE[0],
            maximum: PRIORITY_RANGE[1],
            default: PRIORITY_DEFAULT,
            description:
              "Where the graph's tasks stand when workers are short: 1 first, 5 last. Among graphs of one priority, work is shared out between graphs in turn.",
          },
        } satisfies Record<keyof GraphPolicy, Schema>,
      },
      tasks: { type: 'array', minItems: 1, maxItems: MAX_TASKS_PER_GRAPH, items: { $ref: '#/$defs/task' }, description: 'The tasks.' },
    } satisfies Record<keyof GraphSpec, Schema>,
    $defs: {
      task: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'run', 'verify'],
        properties: {
          key: { ...key, description: "The task's key, unique in the graph: lower case, digits, - and _. Its id is <graph>/<key>." },
          dependsOn: {
            type: ['array', 'null'],
            items: key,
            uniqueItems: true,
            maxItems: MAX_DEPENDENCIES_PER_TASK,
            description: 'Keys of the tasks this one builds on: it starts once they are all verified, on their verified revisions.',
          },
          description: text('One line for people. (Default: the key)', { maxLength: MAX_TEXT_LENGTH.description, nullable: true }),
          run: { $ref: '#/$defs/run' },
          verify: { $ref: '#/$defs/verify' },
          payload: {
            description:
              'Input for the agent, as any JSON value: a function runner reads it as `claim.spec.payload`. Never used for identity or ownership.',
          },
          tools: {
            type: ['object', 'null'],
            additionalProperties: false,
            description: "What the task's agent may do through the tool gateway, enforced by the ledger.",
            properties: {
              allow: {
                type: ['array', 'null'],
                items: { type: 'string', pattern: TOOL_NAME_PATTERN.source },
                uniqueItems: true,
                maxItems: MAX_ALLOWED_TOOLS,
                description: 'The tools it may call. (Default: any the worker offers)',
              },
              maxCalls: {
                type: ['integer', 'null'],
                minimum: MAX_CALLS_RANGE[0],
                maximum: MAX_CALLS_RANGE[1],
                description: 'How many different calls (steps) it may make over all its runs. (Default: no limit)',
              },
              maxCost: {
                type: ['number', 'null'],
                minimum: MAX_COST_RANGE[0],
                maximum: MAX_COST_RANGE[1],
                description:
                  'What its calls may cost in all, as its tools report it (a numeric `cost` in a call result); refused once reached. (Default: no limit)',
              },
            } satisfies Record<keyof TaskTools, Schema>,
          },
          concurrency: {
            type: ['object', 'null'],
            additionalProperties: false,
            required: ['key', 'limit'],
            description:
              'A key the task shares with other tasks, in any graph (a database, a deploy target), and how many of them may run at once.',
            properties: {
              key: { type: 'string', pattern: CONCURRENCY_KEY_PATTERN.source, description: 'The shared resource, by name.' },
              limit: {
                type: 'integer',
                minimum: CONCURRENCY_LIMIT_RANGE[0],
                maximum: CONCURRENCY_LIMIT_RANGE[1],
                description: 'How many tasks with this key may run at once.',
              },
            } satisfies Record<keyof TaskConcurrency, Schema>,
          },
        } satisfies Record<Exclude<keyof GraphSpec['tasks'][number], 'spec'> | keyof TaskSpec, Schema>,
      },
      run: {
        description:
          'What to run: a command line, or a mapping naming exactly one of command, function or pool (remote agents of that pool ' +
          'take the task through the agent API). A command or function run may name its agent, the identity its calls to the agent API are made as.',
        oneOf: [
          text(COMMAND, { maxLength: MAX_TEXT_LENGTH.command }),
          {
            type: 'object',
            additionalProperties: false,
            properties: {
              command: text(COMMAND, { maxLength: MAX_TEXT_LENGTH.command, nullable: true }),
              function: text(FUNCTION, { nullable: true }),
              pool: {
                type: ['string', 'null'],
                pattern: POOL_PATTERN.source,
                description: 'A pool of remote agents; one of them takes the task through the agent API.',
              },
              agent: text("The identity the run's agent acts as in the agent API; not for a pooled run. (Default: the task id)", {
                maxLength: MAX_TEXT_LENGTH.agent,
                nullable: true,
              }),
            } satisfies Record<keyof TaskSpec['run'], Schema>,
            ...exactlyOne(['command', 'function', 'pool']),
            not: { required: ['pool', 'agent'], properties: { pool: { type: 'string' }, agent: { type: 'string' } } },
          },
        ],
      },
      verify: {
        description:
          'How to verify the artifact, in a clean checkout of its commit: a command line, or a mapping naming one of command or ' +
          'function, or approval, or one of them and approval (a person decides after the command passes), and the paths the agent ' +
          'may not change (protect). An artifact is released only after verification.',
        oneOf: [
          text(COMMAND, { maxLength: MAX_TEXT_LENGTH.command }),
          {
            type: 'object',
            additionalProperties: false,
            properties: {
              command: text(COMMAND, { maxLength: MAX_TEXT_LENGTH.command, nullable: true }),
              function: text(FUNCTION, { nullable: true }),
              protect: {
                type: ['array', 'null'],
                maxItems: MAX_PROTECTED_PATHS,
                items: text(
                  "A path or glob (`test/**`) relative to the repository's top, as git matches pathspecs; no '..' or empty part.",
                  {
                    maxLength: MAX_TEXT_LENGTH.protectedPath,
                  },
                ),
                description: 'Paths the agent may not change, besides every .gitattributes and the files the verify command runs.',
              },
              approval: {
                description:
                  'A person decides last: the task waits until a token with the approve scope approves or rejects it (`baton approve`). ' +
                  '`true`, or a mapping of how long to wait and what a wait that runs out decides.',
                oneOf: [
                  { type: ['boolean', 'null'] },
                  {
                    type: 'object',
                    additionalProperties: false,
                    properties: {
                      timeoutMs: {
                        type: ['integer', 'null'],
                        minimum: APPROVAL_TIMEOUT_MS_RANGE[0],
                        maximum: APPROVAL_TIMEOUT_MS_RANGE[1],
                        description: 'How long to wait for a decision, in ms. (Default: no limit)',
                      },
                      onTimeout: {
                        enum: [...APPROVAL_TIMEOUT_POLICIES, null],
                        description:
                          "A wait that runs out is a rejection (`reject`: the graph's onVerificationFailure applies) or fails the task (`fail`). (Default: `reject`)",
                      },
                    } satisfies Record<keyof TaskApproval, Schema>,
                  },
                ],
              },
            } satisfies Record<keyof TaskSpec['verify'], Schema>,
            // At most one of command and function; one of them, or an approval.
            not: { required: ['command', 'function'], properties: { command: { type: 'string' }, function: { type: 'string' } } },
            anyOf: [
              ...exactlyOne(['command', 'function']).oneOf,
              { required: ['approval'], properties: { approval: { not: { enum: [null, false] } } } },
            ],
          },
        ],
      },
    },
  };
}
