import { randomUUID } from 'node:crypto';
import { describeValue } from '../describeValue.js';
import { InvalidGraphError, InvalidInputError, type GraphProblem } from '../errors.js';
import { toJson } from '../json.js';
import { isStorableText, UNSTORABLE_TEXT } from '../storableText.js';
import { nearestKey } from './nearestKey.js';
import { isRemoteRepo, remoteRepoProblem } from './repoLocation.js';
import type { TaskApproval, TaskConcurrency, TaskSpec, TaskTools } from './types.js';

/** Most tasks one graph may hold (the store's task_propose holds it too). */
export const MAX_TASKS_PER_GRAPH = 50_000;
/** Most dependencies one task may name. */
export const MAX_DEPENDENCIES_PER_TASK = 100;
/** Largest task spec, serialised, in bytes; large inputs belong in files or the repository. */
export const MAX_TASK_SPEC_BYTES = 64 * 1024;
/** Default heartbeat timeout: how long an owner may be silent before recovery starts. */
export const HEARTBEAT_TIMEOUT_MS_DEFAULT = 10_000;
/** Allowed heartbeat timeouts: below 1 s recovery churns; above 1 h a dead owner holds work too long. */
export const HEARTBEAT_TIMEOUT_MS_RANGE = [1_000, 3_600_000] as const;
/** Allowed attempts per task. */
export const MAX_ATTEMPTS_RANGE = [1, 100] as const;
/**
 * Default number of runs of one task on one set of inputs (first run, reruns after rejection and
 * reclaims after silence); an operator's rerun or one for an upstream change starts a fresh count.
 */
export const MAX_ATTEMPTS_DEFAULT = 3;

/** Graph ids and task keys. */
export const KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Longest text of each kind, in UTF-16 code units. */
export const MAX_TEXT_LENGTH = { description: 2_000, command: 10_000, agent: 200, protectedPath: 4_096 } as const;

/** What to do when verification rejects an artifact; the first is the default. */
export const VERIFICATION_FAILURE_POLICIES = ['rerun', 'fail'] as const;
type VerificationFailurePolicy = (typeof VERIFICATION_FAILURE_POLICIES)[number];

/** What to do with a task left stale because an upstream task moved to a new revision (T8); the first is the default. */
export const UPSTREAM_CHANGE_POLICIES = ['rerun', 'mark'] as const;
type UpstreamChangePolicy = (typeof UPSTREAM_CHANGE_POLICIES)[number];
/** What becomes of subtasks an agent proposes (U11): wait for an operator, added at once, or refused; the first is the default. */
export const SUBTASK_POLICIES = ['review', 'accept', 'refuse'] as const;
type SubtaskPolicy = (typeof SUBTASK_POLICIES)[number];
/** A graph's `policy.priority`: 1 runs first, 5 last (Temporal's task queue priority keys). */
export const PRIORITY_RANGE = [1, 5] as const;
/** The priority of a graph that names none: Temporal's default, the middle of the range. */
export const PRIORITY_DEFAULT = 3;
/** Most subtasks one task may propose, over all its runs. */
export const MAX_SUBTASKS_PER_TASK = 50;

export interface GraphPolicy {
  /** Runs allowed per task, counting reclaims and reruns. (Default: 3) */
  maxAttempts: number;
  /** After a rejected verification: run the agent again (`rerun`) or fail the task. (Default: `rerun`) */
  onVerificationFailure: VerificationFailurePolicy;
  /** Owner silence that starts recovery, in ms. (Default: 10s) */
  heartbeatTimeoutMs: number;
  /**
   * When an upstream task is verified at a new revision, its dependents built on the old one are
   * stale: run them again on the new revisions and verify them without a person (`rerun`), or
   * leave them stale until `baton rerun` (`mark`). (Default: `rerun`)
   */
  onUpstreamChange: UpstreamChangePolicy;
  /** U11: at most this many of the graph's tasks running at once. (Default: no limit) */
  maxRunning?: number;
  /**
   * U11: subtasks a running task's agent proposes (`task.propose`) wait for an operator to accept
   * or decline them (`review`), are added at once (`accept`), or are refused (`refuse`). A subtask
   * runs and is verified as its proposer is: the agent names its key, description, payload and
   * dependencies only. (Default: `review`)
   */
  subtasks?: SubtaskPolicy;
  /**
   * U11: where the graph's tasks stand when workers are short: 1 first, 5 last. Among graphs of one
   * priority, work is shared out between graphs in turn, not first come first served. (Default: 3)
   */
  priority?: number;
}

interface GraphTaskSpec {
  key: string;
  spec: TaskSpec;
  dependsOn: string[];
}

export interface GraphSpec {
  id: string;
  /**
   * Git repository the command runner and verifier work in: an absolute path (one machine), or a
   * remote URL (file, git, ssh, http, https) of which each worker keeps a mirror.
   */
  repo?: string;
  /** Revision the first tasks start from. (Default: `HEAD`) */
  base: string;
  policy: GraphPolicy;
  tasks: GraphTaskSpec[];
}

type Problems = GraphProblem[];
/** Where a value is in the graph: `['tasks', 2, 'verify']`. */
type Path = GraphProblem['path'];

/** The keys of `T` as a list; the compiler checks that it names each of them and nothing else. */
const keysOf = <T>(keys: Record<keyof T, true>): readonly string[] => Object.keys(keys);

// The keys each level of a graph may have. Any other key is refused by name: a typo such as
// `polcy:` must not pass silently and leave the defaults in force.
const GRAPH_KEYS = keysOf<GraphSpec>({ id: true, repo: true, base: true, policy: true, tasks: true });
const POLICY_KEYS = keysOf<GraphPolicy>({
  maxAttempts: true,
  onVerificationFailure: true,
  heartbeatTimeoutMs: true,
  onUpstreamChange: true,
  maxRunning: true,
  subtasks: true,
  priority: true,
});
/** The range of a graph's `policy.maxRunning` and of a task's `concurrency.limit`. */
export const CONCURRENCY_LIMIT_RANGE = [1, 10_000] as const;
/** Concurrency keys: what a task's `concurrency.key` names, shared by every graph that names it. */
export const CONCURRENCY_KEY_PATTERN = /^[a-z0-9][a-z0-9_.:-]{0,62}$/;
const CONCURRENCY_KEYS = keysOf<TaskConcurrency>({ key: true, limit: true });
const TASK_KEYS = keysOf<Omit<GraphTaskSpec, 'spec'> & TaskSpec>({
  key: true,
  dependsOn: true,
  description: true,
  run: true,
  verify: true,
  payload: true,
  tools: true,
  concurrency: true,
});
const RUN_KEYS = keysOf<TaskSpec['run']>({ command: true, function: true, pool: true, agent: true });
const VERIFY_KEYS = keysOf<TaskSpec['verify']>({ command: true, function: true, protect: true, approval: true });
const APPROVAL_KEYS = keysOf<TaskApproval>({ timeoutMs: true, onTimeout: true });
/** The range of an approval's `timeoutMs`: a second to 30 days. */
export const APPROVAL_TIMEOUT_MS_RANGE = [1_000, 30 * 24 * 3_600_000] as const;
/** What an approval wait that runs out decides; the first is the default. */
export const APPROVAL_TIMEOUT_POLICIES = ['reject', 'fail'] as const;
/** Most paths one task's `verify.protect` may name. */
export const MAX_PROTECTED_PATHS = 100;
/** Pool names, as the store checks them (0009_agent_api.sql). */
export const POOL_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Tool names, as the ledger checks them (tool_calls.sql), in a graph's `tools.allow` and a worker's BATON_HTTP_TOOLS. */
export const TOOL_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Most tools one task's `tools.allow` may name. */
export const MAX_ALLOWED_TOOLS = 50;
/** The range of a task's `tools.maxCalls`. */
export const MAX_CALLS_RANGE = [0, 100_000] as const;
/** The range of a task's `tools.maxCost`, in whatever unit its tools report their cost. */
export const MAX_COST_RANGE = [0, 1e12] as const;
const TOOLS_KEYS = keysOf<TaskTools>({ allow: true, maxCalls: true, maxCost: true });

/**
 * A list's items as the parser reads them: a hole (JavaScript's `[,]`; never from YAML or JSON) is
 * an undefined item. Array methods skip holes, so a list of holes would otherwise pass as empty.
 */
function itemsOf(list: readonly unknown[]): unknown[] {
  return Array.from(list);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Input text as a problem quotes it: in single quotes, cut short, control characters escaped. */
function quoted(text: string): string {
  return `'${describeValue(text).slice(1, -1)}'`;
}

/**
 * Names every key of `value`, the mapping at `path`, outside `known`, with the nearest known one;
 * a key of a named mapping is named with it (`run.comand`).
 */
function checkKeys(value: Record<string, unknown>, known: readonly string[], path: Path, problems: Problems, at?: string): void {
  const parent = path[path.length - 1];
  const prefix = typeof parent === 'string' ? `${parent}.` : '';
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const near = nearestKey(key, known);
    const problem = `unknown key ${quoted(prefix + key)}${near ? ` (did you mean ${quoted(prefix + near)}?)` : ''}`;
    problems.push({ path: [...path, key], message: at ? `${at}: ${problem}` : problem });
  }
}

type TextOptions = { required?: boolean; max?: number };

function text(value: unknown, where: string, path: Path, problems: Problems, options: TextOptions = {}): string | undefined {
  const problem = (message: string) => void problems.push({ path, message: `${where} ${message}` });
  if (value === undefined || value === null) {
    if (options.required) problem('is required');
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') {
    problem('must be a non-empty string');
    return undefined;
  }
  if (!isStorableText(value)) {
    problem(UNSTORABLE_TEXT);
    return undefined;
  }
  if (options.max && value.length > options.max) problem(`is longer than ${options.max} characters`);
  return value;
}

/** The policy's `name`: an integer from `min` to `max`, else `fallback`. */
function policyInt(
  p: Record<string, unknown>,
  name: keyof GraphPolicy,
  fallback: number,
  [min, max]: readonly number[],
  problems: Problems,
): number {
  const value = p[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min! || value > max!) {
    problems.push({ path: ['policy', name], message: `policy.${name} must be an integer from ${min} to ${max}` });
    return fallback;
  }
  return value;
}

/**
 * A cycle among `tasks`, as the list of keys around it, or undefined. Depth-first without
 * recursion: a chain as long as a graph may be must not overflow the stack.
 */
export function findCycle(tasks: ReadonlyArray<{ key: string; dependsOn: readonly string[] }>): string[] | undefined {
  const deps = new Map(tasks.map((t) => [t.key, t.dependsOn]));
  const state = new Map<string, 'visiting' | 'done'>();
  for (const t of tasks) {
    if (state.has(t.key)) continue;
    // The path being explored, each task with the index of its next dependency to look at.
    const path = [{ key: t.key, next: 0 }];
    state.set(t.key, 'visiting');
    while (path.length) {
      const top = path[path.length - 1]!;
      const dep = deps.get(top.key)?.[top.next++];
      if (dep === undefined) {
        state.set(top.key, 'done');
        path.pop();
      } else if (state.get(dep) === 'visiting') {
        const keys = path.map((p) => p.key);
        return [...keys.slice(keys.indexOf(dep)), dep];
      } else if (!state.has(dep)) {
        state.set(dep, 'visiting');
        path.push({ key: dep, next: 0 });
      }
    }
  }
  return undefined;
}

function parsePolicy(input: unknown, problems: Problems): GraphPolicy {
  const p = input === undefined ? {} : input;
  if (!isRecord(p)) {
    problems.push({ path: ['policy'], message: 'policy must be a mapping' });
    return parsePolicy(undefined, problems);
  }
  checkKeys(p, POLICY_KEYS, ['policy'], problems);
  const onVerificationFailure = policyChoice(p, 'onVerificationFailure', VERIFICATION_FAILURE_POLICIES, problems);
  const onUpstreamChange = policyChoice(p, 'onUpstreamChange', UPSTREAM_CHANGE_POLICIES, problems);
  const maxRunning =
    p.maxRunning === undefined || p.maxRunning === null ? undefined : policyInt(p, 'maxRunning', 0, CONCURRENCY_LIMIT_RANGE, problems);
  return {
    maxAttempts: policyInt(p, 'maxAttempts', MAX_ATTEMPTS_DEFAULT, MAX_ATTEMPTS_RANGE, problems),
    onVerificationFailure,
    heartbeatTimeoutMs: policyInt(p, 'heartbeatTimeoutMs', HEARTBEAT_TIMEOUT_MS_DEFAULT, HEARTBEAT_TIMEOUT_MS_RANGE, problems),
    onUpstreamChange,
    ...(maxRunning ? { maxRunning } : {}),
    ...(p.subtasks !== undefined && p.subtasks !== null ? { subtasks: policyChoice(p, 'subtasks', SUBTASK_POLICIES, problems) } : {}),
    ...(p.priority !== undefined && p.priority !== null
      ? { priority: policyInt(p, 'priority', PRIORITY_DEFAULT, PRIORITY_RANGE, problems) }
      : {}),
  };
}

/** The policy's `name`: one of `choices`, the first when it is absent (or null) or wrong. */
function policyChoice<T extends string>(
  p: Record<string, unknown>,
  name: keyof GraphPolicy,
  choices: readonly [T, ...T[]],
  problems: Problems,
): T {
  const value = p[name] ?? choices[0];
  if (choices.includes(value as T)) return value as T;
  const named = choices.map((c) => `'${c}'`);
  problems.push({
    path: ['policy', name],
    message: `policy.${name} must be ${named.slice(0, -1).join(', ')} or ${named.at(-1)}, not ${describeValue(value)}`,
  });
  return choices[0];
}

type Step = TaskSpec['run'] & TaskSpec['verify'];

/**
 * A task's `run` or `verify`: a command line, or a mapping naming exactly one of command or
 * function (or, to run, pool: remote agents of that pool do the work through the agent API). A
 * run may name its agent (`agent:`), the identity its calls to the agent API are made as.
 */
function parseStep(input: unknown, name: 'run' | 'verify', at: string, taskPath: Path, problems: Problems): Step {
  const step = typeof input === 'string' ? { command: input } : input;
  const path = [...taskPath, name];
  const problem = (key: string, message: string) => void problems.push({ path: [...path, key], message: `${at}: ${message}` });
  const kinds = name === 'run' ? ['command', 'function', 'pool'] : ['command', 'function'];
  const exactlyOne = {
    path,
    message:
      name === 'run'
        ? `${at}: run must name exactly one of command, function or pool`
        : `${at}: verify must name exactly one of command or function, or an approval, or one of each (an artifact is released only after verification)`,
  };
  if (!isRecord(step)) {
    problems.push(exactlyOne);
    return {};
  }
  checkKeys(step, name === 'run' ? RUN_KEYS : VERIFY_KEYS, path, problems, at);
  // null counts as absent, as text() reads it: `function: null` must not pass for a named function.
  // An approval may stand alone or follow a command or function.
  const named = kinds.filter((k) => step[k] != null).length;
  if (named > 1 || (named === 0 && (name === 'run' || step.approval == null))) problems.push(exactlyOne);
  const command = text(step.command, `${at}: ${name}.command`, [...path, 'command'], problems, { max: MAX_TEXT_LENGTH.command });
  const fn = text(step.function, `${at}: ${name}.function`, [...path, 'function'], problems);
  const pool = name === 'run' ? text(step.pool, `${at}: run.pool`, [...path, 'pool'], problems) : undefined;
  if (pool !== undefined && !POOL_PATTERN.test(pool)) problem('pool', `run.pool must match ${POOL_PATTERN}`);
  const agent =
    name === 'run' ? text(step.agent, `${at}: run.agent`, [...path, 'agent'], problems, { max: MAX_TEXT_LENGTH.agent }) : undefined;
  if (agent !== undefined && pool !== undefined)
    problem('agent', "run.agent names a worker run's agent; a pooled run's agent is whoever takes it, by its token");
  const protect = name === 'verify' ? parseProtect(step.protect, `${at}: verify.protect`, [...path, 'protect'], problems) : undefined;
  const approval = name === 'verify' ? parseApproval(step.approval, at, [...path, 'approval'], problems) : undefined;
  return {
    ...(command === undefined ? {} : { command }),
    ...(fn === undefined ? {} : { function: fn }),
    ...(pool === undefined ? {} : { pool }),
    ...(agent === undefined ? {} : { agent }),
    ...(protect === undefined ? {} : { protect }),
    ...(approval === undefined ? {} : { approval }),
  };
}

/** U11: `verify.approval`, `true` or a mapping of timeoutMs and onTimeout (docs/tasks.md). */
function parseApproval(input: unknown, at: string, path: Path, problems: Problems): TaskApproval | undefined {
  if (input === undefined || input === null || input === false) return undefined;
  if (input === true) return {};
  if (!isRecord(input)) {
    problems.push({ path, message: `${at}: verify.approval must be true or a mapping of timeoutMs and onTimeout` });
    return undefined;
  }
  checkKeys(input, APPROVAL_KEYS, path, problems, at);
  const approval: TaskApproval = {};
  const { timeoutMs, onTimeout } = input;
  const [min, max] = APPROVAL_TIMEOUT_MS_RANGE;
  if (timeoutMs !== undefined && timeoutMs !== null) {
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < min || timeoutMs > max)
      problems.push({ path: [...path, 'timeoutMs'], message: `${at}: verify.approval.timeoutMs must be an integer from ${min} to ${max}` });
    else approval.timeoutMs = timeoutMs;
  }
  if (onTimeout !== undefined && onTimeout !== null) {
    if (!APPROVAL_TIMEOUT_POLICIES.includes(onTimeout as TaskApproval['onTimeout'] & string))
      problems.push({
        path: [...path, 'onTimeout'],
        message: `${at}: verify.approval.onTimeout must be '${APPROVAL_TIMEOUT_POLICIES.join("' or '")}', not ${describeValue(onTimeout)}`,
      });
    else approval.onTimeout = onTimeout as TaskApproval['onTimeout'];
  }
  return approval;
}

/**
 * T12: `verify.protect`, the repository paths the agent may not change (docs/tasks.md): each
 * a path or glob (`test/**`) relative to the repository's top, as git matches pathspecs.
 */
function parseProtect(input: unknown, where: string, path: Path, problems: Problems): string[] | undefined {
  if (input === undefined || input === null) return undefined;
  if (!Array.isArray(input)) {
    problems.push({ path, message: `${where} must be a list of paths` });
    return undefined;
  }
  if (input.length > MAX_PROTECTED_PATHS) problems.push({ path, message: `${where} names more than ${MAX_PROTECTED_PATHS} paths` });
  const paths: string[] = [];
  itemsOf(input.slice(0, MAX_PROTECTED_PATHS)).forEach((entry, i) => {
    const value = text(entry, `${where}[${i}]`, [...path, i], problems, { max: MAX_TEXT_LENGTH.protectedPath, required: true });
    if (value === undefined) return;
    const segments = value.replace(/\/$/, '').split('/');
    if (value.startsWith('/') || value.startsWith(':') || segments.some((s) => s === '..' || s === '')) {
      problems.push({
        path: [...path, i],
        message: `${where}[${i}] must be a path inside the repository, relative to its top, with no '..' or empty part: ${quoted(value)}`,
      });
      return;
    }
    paths.push(segments.filter((s) => s !== '.').join('/') || '.');
  });
  return paths;
}

/** U11: `tools`, what the task's agent may do through the tool gateway (docs/tools.md). */
function parseTools(input: unknown, at: string, path: Path, problems: Problems): TaskTools | undefined {
  if (input === undefined || input === null) return undefined;
  if (!isRecord(input)) {
    problems.push({ path, message: `${at}: tools must be a mapping of allow, maxCalls and maxCost` });
    return undefined;
  }
  checkKeys(input, TOOLS_KEYS, path, problems, at);
  const tools: TaskTools = {};
  if (input.allow !== undefined && input.allow !== null) {
    const allow = input.allow;
    if (!Array.isArray(allow) || itemsOf(allow).some((t) => typeof t !== 'string' || !TOOL_NAME_PATTERN.test(t))) {
      problems.push({ path: [...path, 'allow'], message: `${at}: tools.allow must be a list of tool names matching ${TOOL_NAME_PATTERN}` });
    } else if (allow.length > MAX_ALLOWED_TOOLS) {
      problems.push({ path: [...path, 'allow'], message: `${at}: tools.allow names more than ${MAX_ALLOWED_TOOLS} tools` });
    } else if (new Set(allow).size !== allow.length) {
      problems.push({ path: [...path, 'allow'], message: `${at}: tools.allow names a tool twice` });
    } else {
      tools.allow = allow as string[];
    }
  }
  if (input.maxCalls !== undefined && input.maxCalls !== null) {
    const max = input.maxCalls;
    if (typeof max !== 'number' || !Number.isInteger(max) || max < MAX_CALLS_RANGE[0] || max > MAX_CALLS_RANGE[1]) {
      problems.push({
        path: [...path, 'maxCalls'],
        message: `${at}: tools.maxCalls must be an integer from ${MAX_CALLS_RANGE[0]} to ${MAX_CALLS_RANGE[1]}`,
      });
    } else {
      tools.maxCalls = max;
    }
  }
  if (input.maxCost !== undefined && input.maxCost !== null) {
    const max = input.maxCost;
    if (typeof max !== 'number' || !Number.isFinite(max) || max < MAX_COST_RANGE[0] || max > MAX_COST_RANGE[1]) {
      problems.push({
        path: [...path, 'maxCost'],
        message: `${at}: tools.maxCost must be a number from ${MAX_COST_RANGE[0]} to ${MAX_COST_RANGE[1]}`,
      });
    } else {
      tools.maxCost = max;
    }
  }
  return tools;
}

/** U11: `concurrency`, a key the task shares with others (in any graph) and how many of them may run at once. */
function parseConcurrency(input: unknown, at: string, path: Path, problems: Problems): TaskConcurrency | undefined {
  if (input === undefined || input === null) return undefined;
  const [min, max] = CONCURRENCY_LIMIT_RANGE;
  const wrong = `${at}: concurrency must be a mapping of key (matching ${CONCURRENCY_KEY_PATTERN}) and limit (an integer from ${min} to ${max})`;
  if (!isRecord(input)) {
    problems.push({ path, message: wrong });
    return undefined;
  }
  checkKeys(input, CONCURRENCY_KEYS, path, problems, at);
  const { key, limit } = input;
  if (typeof key !== 'string' || !CONCURRENCY_KEY_PATTERN.test(key)) problems.push({ path: [...path, 'key'], message: wrong });
  else if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < min || limit > max)
    problems.push({ path: [...path, 'limit'], message: wrong });
  else return { key, limit };
  return undefined;
}

function parseTask(raw: unknown, index: number, problems: Problems): GraphTaskSpec | undefined {
  const where = `tasks[${index}]`;
  const path = ['tasks', index];
  if (!isRecord(raw)) {
    problems.push({ path, message: `${where} must be a mapping` });
    return undefined;
  }
  const key = text(raw.key, `${where}.key`, [...path, 'key'], problems, { required: true });
  const at = key === undefined ? where : `task ${quoted(key)}`;
  const problem = (message: string, ...under: Path) => void problems.push({ path: [...path, ...under], message: `${at}: ${message}` });
  checkKeys(raw, TASK_KEYS, path, problems, at);
  if (key !== undefined && !KEY_PATTERN.test(key)) problem(`key must match ${KEY_PATTERN}`, 'key');
  let dependsOn = raw.dependsOn ?? [];
  if (!Array.isArray(dependsOn) || itemsOf(dependsOn).some((d) => typeof d !== 'string')) {
    problem('dependsOn must be a list of task keys', 'dependsOn');
    dependsOn = [];
  }
  const deps = dependsOn as string[];
  if (deps.length > MAX_DEPENDENCIES_PER_TASK) problem(`more than ${MAX_DEPENDENCIES_PER_TASK} dependencies`, 'dependsOn');
  const repeated = deps.findIndex((d, i) => deps.indexOf(d) !== i);
  if (repeated >= 0) problem('dependsOn names a task twice', 'dependsOn', repeated);
  if (key !== undefined && deps.includes(key)) problem('depends on itself', 'dependsOn', deps.indexOf(key));
  const spec: TaskSpec = {
    description:
      text(raw.description, `${at}: description`, [...path, 'description'], problems, { max: MAX_TEXT_LENGTH.description }) ?? key ?? '',
    run: parseStep(raw.run, 'run', at, path, problems),
    verify: parseStep(raw.verify, 'verify', at, path, problems),
  };
  const tools = parseTools(raw.tools, at, [...path, 'tools'], problems);
  if (tools !== undefined) spec.tools = tools;
  const concurrency = parseConcurrency(raw.concurrency, at, [...path, 'concurrency'], problems);
  if (concurrency !== undefined) spec.concurrency = concurrency;
  if (raw.payload !== undefined) {
    try {
      spec.payload = toJson(raw.payload, 'payload');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      problem(error.detail, 'payload');
    }
  }
  let storable = true;
  const serialised = JSON.stringify(spec, (name: string, value: unknown) => {
    storable &&= isStorableText(name) && (typeof value !== 'string' || isStorableText(value));
    return value;
  });
  if (!storable) problem(`payload ${UNSTORABLE_TEXT}`, 'payload');
  if (Buffer.byteLength(serialised) > MAX_TASK_SPEC_BYTES) problem(`spec is larger than ${MAX_TASK_SPEC_BYTES} bytes`);
  return key === undefined ? undefined : { key, spec, dependsOn: deps };
}

function parseTasks(input: unknown, problems: Problems): GraphTaskSpec[] {
  if (!Array.isArray(input) || input.length === 0) {
    problems.push({ path: ['tasks'], message: 'tasks must be a non-empty list' });
    return [];
  }
  if (input.length > MAX_TASKS_PER_GRAPH) {
    problems.push({ path: ['tasks'], message: `a graph may hold at most ${MAX_TASKS_PER_GRAPH} tasks, this one has ${input.length}` });
    return [];
  }
  const tasks: GraphTaskSpec[] = [];
  const indexes: number[] = []; // each task's place in the list, for the path of a problem found across tasks
  const seen = new Set<string>();
  itemsOf(input).forEach((raw, index) => {
    const task = parseTask(raw, index, problems);
    if (!task) return;
    if (seen.has(task.key)) problems.push({ path: ['tasks', index, 'key'], message: `task ${quoted(task.key)}: duplicate key` });
    seen.add(task.key);
    tasks.push(task);
    indexes.push(index);
  });
  const dependency = (i: number, dep: string): Path => ['tasks', indexes[i]!, 'dependsOn', tasks[i]!.dependsOn.indexOf(dep)];
  tasks.forEach((t, i) => {
    for (const dep of t.dependsOn)
      if (!seen.has(dep)) problems.push({ path: dependency(i, dep), message: `task ${quoted(t.key)}: unknown dependency ${quoted(dep)}` });
  });
  // Self-dependencies are already named above; any other cycle is reported alongside every other problem,
  // at its first dependency (of tasks sharing a key, the last, as findCycle reads them).
  const cycle = findCycle(tasks.map((t) => ({ key: t.key, dependsOn: t.dependsOn.filter((d) => d !== t.key) })));
  if (cycle) {
    const start = tasks.map((t) => t.key).lastIndexOf(cycle[0]!);
    problems.push({ path: dependency(start, cycle[1]!), message: `dependency cycle: ${cycle.join(' -> ')}` });
  }
  return tasks;
}

/**
 * U11: the tasks `added` (a list, as a graph file lists them) to `graph`, validated together with
 * the graph's own tasks, which stand in by key and dependencies: keys taken, unknown dependencies,
 * cycles, size limits and the repo rule, every problem at once in one InvalidGraphError.
 */
export function parseGraphAddition(
  graph: Pick<GraphSpec, 'id' | 'base' | 'policy'> & { repo?: string | null; tasks: ReadonlyArray<{ key: string; dependsOn: string[] }> },
  added: unknown,
  options: { resolveRepo?: (repo: string) => string } = {},
): GraphTaskSpec[] {
  if (!Array.isArray(added) || added.length === 0) throw new InvalidInputError('give the tasks to add as a non-empty `tasks` list');
  const stand = { run: { function: 'existing' }, verify: { function: 'existing' } };
  const existing = graph.tasks.map((t) => ({ key: t.key, dependsOn: t.dependsOn, ...stand }));
  const whole = parseGraphSpec(
    { id: graph.id, repo: graph.repo, base: graph.base, policy: graph.policy, tasks: [...existing, ...added] },
    options,
  );
  return whole.tasks.slice(existing.length);
}

/** What an agent names of a subtask it proposes (U11); the rest of its spec is its proposer's. */
interface ProposedSubtask {
  key: string;
  description: string;
  payload?: unknown;
  dependsOn: string[];
}

/** What an agent names of a subtask it proposes. */
const PROPOSED_KEYS = keysOf<ProposedSubtask>({ key: true, description: true, payload: true, dependsOn: true });
/** The parts of a task a subtask takes from its proposer, never from the proposal: every other (run, verify, tools, concurrency). */
const INHERITED_KEYS = TASK_KEYS.filter((name) => !PROPOSED_KEYS.includes(name));

/**
 * U11: the subtasks an agent proposes (`task.propose`), validated as tasks added to a graph are:
 * keys, descriptions, payloads, dependencies among them (no cycle) and on other tasks, named by
 * key; whether those exist is the store's to say. A subtask runs and is verified as its proposer
 * is, so a proposal naming any other part of a task (`run`, `verify`, `tools`, `concurrency`, and
 * whatever a task may name later) is refused: an agent cannot give work it spawns another check,
 * another agent or more tools than its own.
 */
export function parseSubtasks(input: unknown): ProposedSubtask[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_SUBTASKS_PER_TASK)
    throw new InvalidInputError(`give the subtasks as a list of 1 to ${MAX_SUBTASKS_PER_TASK} tasks`);
  const problems: Problems = [];
  const proposed = new Set(input.map((raw) => (isRecord(raw) ? raw.key : undefined)).filter((k) => typeof k === 'string'));
  const outside = new Set<string>();
  input.forEach((raw, index) => {
    if (!isRecord(raw)) return;
    for (const name of INHERITED_KEYS)
      if (raw[name] !== undefined)
        problems.push({
          path: ['tasks', index, name],
          message: `tasks[${index}]: a subtask runs and is verified as the task proposing it is; its ${name} is not the proposal's to set`,
        });
    if (Array.isArray(raw.dependsOn))
      for (const d of raw.dependsOn) if (typeof d === 'string' && KEY_PATTERN.test(d) && !proposed.has(d)) outside.add(d);
  });
  // The tasks depended on outside the proposal stand in by key; any other problem is parseGraphSpec's to name.
  const stand = { run: { function: 'proposer' }, verify: { function: 'proposer' } };
  const tasks = [...outside].map((key) => ({ key, ...stand }));
  const items = input.map((raw) => (isRecord(raw) ? { ...raw, ...stand } : raw));
  let parsed: GraphTaskSpec[] = [];
  try {
    // The stand-ins after the proposal's own, so a problem's place in the list is the proposal's.
    parsed = parseGraphSpec({ id: 'proposal', tasks: [...items, ...tasks] }).tasks.slice(0, items.length);
  } catch (error) {
    if (!(error instanceof InvalidGraphError)) throw error;
    problems.push(...error.graphProblems);
  }
  if (problems.length) throw new InvalidGraphError(problems);
  return parsed.map((t) => ({
    key: t.key,
    description: t.spec.description,
    ...(t.spec.payload !== undefined && { payload: t.spec.payload }),
    dependsOn: t.dependsOn,
  }));
}

/**
 * Validates a graph as parsed from YAML or JSON, and fills in defaults. Unknown keys are refused
 * by name. Every problem is reported at once in one InvalidGraphError; nothing is written by a
 * caller that gets one.
 */
export function parseGraphSpec(input: unknown, options: { resolveRepo?: (repo: string) => string } = {}): GraphSpec {
  if (!isRecord(input)) throw new InvalidGraphError([{ path: [], message: 'a graph must be a mapping with a `tasks` list' }]);
  const problems: Problems = [];
  checkKeys(input, GRAPH_KEYS, [], problems);
  // An empty `id:` in YAML is null: generated, as when it is left out.
  const id = input.id === undefined || input.id === null ? `g-${randomUUID().slice(0, 8)}` : text(input.id, 'id', ['id'], problems);
  if (id && !KEY_PATTERN.test(id))
    problems.push({ path: ['id'], message: `id ${quoted(id)} must match ${KEY_PATTERN} (lower case, digits, - and _)` });
  const repo = text(input.repo, 'repo', ['repo'], problems);
  const remote = repo !== undefined && isRemoteRepo(repo);
  const repoProblem = remote ? remoteRepoProblem(repo) : undefined;
  if (repoProblem) problems.push({ path: ['repo'], message: `repo: ${repoProblem}` });
  const base = text(input.base, 'base', ['base'], problems) ?? 'HEAD';
  const policy = parsePolicy(input.policy, problems);
  const tasks = parseTasks(input.tasks, problems);
  const runsCommands = tasks.some((t) => t.spec.run.command !== undefined || t.spec.verify.command !== undefined);
  if (runsCommands && (input.repo === undefined || input.repo === null)) {
    problems.push({ path: [], message: 'repo is required when a task runs a command (the command runner works in a git worktree of it)' });
  }
  if (problems.length) throw new InvalidGraphError(problems);
  // A path is resolved as the caller says (relative to the graph's file); a remote is as written.
  return { id: id!, repo: repo && !remote && options.resolveRepo ? options.resolveRepo(repo) : repo, base, policy, tasks };
}
