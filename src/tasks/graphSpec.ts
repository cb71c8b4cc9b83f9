import { randomUUID } from 'node:crypto';
import { describeValue } from '../describeValue.js';
import { InvalidGraphError, InvalidInputError } from '../errors.js';
import { toJson } from '../json.js';
import { isStorableText, UNSTORABLE_TEXT } from '../storableText.js';
import type { TaskSpec } from './types.js';

/** Most tasks one graph may hold. */
export const MAX_TASKS_PER_GRAPH = 10_000;
/** Most dependencies one task may name. */
const MAX_DEPENDENCIES_PER_TASK = 100;
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

const KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** What to do when verification rejects an artifact. */
type VerificationFailurePolicy = 'rerun' | 'fail';

/** What to do with a task left stale because an upstream task moved to a new revision (T8). */
type UpstreamChangePolicy = 'rerun' | 'mark';

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
}

interface GraphTaskSpec {
  key: string;
  spec: TaskSpec;
  dependsOn: string[];
}

export interface GraphSpec {
  id: string;
  /** Git repository the command runner and verifier work in (absolute path). */
  repo?: string;
  /** Revision the first tasks start from. (Default: `HEAD`) */
  base: string;
  policy: GraphPolicy;
  tasks: GraphTaskSpec[];
}

type Problems = string[];

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
});
const TASK_KEYS = keysOf<Omit<GraphTaskSpec, 'spec'> & TaskSpec>({
  key: true,
  dependsOn: true,
  description: true,
  run: true,
  verify: true,
  payload: true,
});
const RUN_KEYS = keysOf<TaskSpec['run']>({ command: true, function: true, pool: true, agent: true });
const VERIFY_KEYS = keysOf<TaskSpec['verify']>({ command: true, function: true, protect: true });
/** Most paths one task's `verify.protect` may name. */
const MAX_PROTECTED_PATHS = 100;
/** Pool names, as the store checks them (0009_agent_api.sql). */
const POOL_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Input text as a problem quotes it: in single quotes, cut short, control characters escaped. */
function quoted(text: string): string {
  return `'${describeValue(text).slice(1, -1)}'`;
}

/** Edit distance (insertions, deletions, substitutions) between two strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The known key nearest to `key`, when it is near enough to be what was meant. */
function nearestKey(key: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    if (Math.abs(name.length - key.length) > limit) continue; // also spares a huge key the distance
    const distance = editDistance(key.toLowerCase(), name.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Names every key of `value` outside `known`, with the nearest known one; `path` prefixes nested keys (`run.`). */
function checkKeys(value: Record<string, unknown>, known: readonly string[], problems: Problems, at?: string, path = ''): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const near = nearestKey(key, known);
    const problem = `unknown key ${quoted(path + key)}${near ? ` (did you mean ${quoted(path + near)}?)` : ''}`;
    problems.push(at ? `${at}: ${problem}` : problem);
  }
}

function text(value: unknown, where: string, problems: Problems, options: { required?: boolean; max?: number } = {}): string | undefined {
  if (value === undefined || value === null) {
    if (options.required) problems.push(`${where} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') {
    problems.push(`${where} must be a non-empty string`);
    return undefined;
  }
  if (!isStorableText(value)) {
    problems.push(`${where} ${UNSTORABLE_TEXT}`);
    return undefined;
  }
  if (options.max && value.length > options.max) problems.push(`${where} is longer than ${options.max} characters`);
  return value;
}

function boundedInt(value: unknown, where: string, fallback: number, [min, max]: readonly [number, number], problems: Problems): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${where} must be an integer from ${min} to ${max}`);
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
    problems.push('policy must be a mapping');
    return parsePolicy(undefined, problems);
  }
  checkKeys(p, POLICY_KEYS, problems, undefined, 'policy.');
  const onVerificationFailure = p.onVerificationFailure ?? 'rerun';
  if (onVerificationFailure !== 'rerun' && onVerificationFailure !== 'fail') {
    problems.push(`policy.onVerificationFailure must be 'rerun' or 'fail', not ${describeValue(onVerificationFailure)}`);
  }
  const onUpstreamChange = p.onUpstreamChange ?? 'rerun';
  if (onUpstreamChange !== 'rerun' && onUpstreamChange !== 'mark') {
    problems.push(`policy.onUpstreamChange must be 'rerun' or 'mark', not ${describeValue(onUpstreamChange)}`);
  }
  return {
    maxAttempts: boundedInt(p.maxAttempts, 'policy.maxAttempts', MAX_ATTEMPTS_DEFAULT, MAX_ATTEMPTS_RANGE, problems),
    onVerificationFailure: onVerificationFailure === 'fail' ? 'fail' : 'rerun',
    heartbeatTimeoutMs: boundedInt(
      p.heartbeatTimeoutMs,
      'policy.heartbeatTimeoutMs',
      HEARTBEAT_TIMEOUT_MS_DEFAULT,
      HEARTBEAT_TIMEOUT_MS_RANGE,
      problems,
    ),
    onUpstreamChange: onUpstreamChange === 'mark' ? 'mark' : 'rerun',
  };
}

/**
 * A task's `run` or `verify`: a command line, or a mapping naming exactly one of command or
 * function (or, to run, pool: remote agents of that pool do the work through the agent API). A
 * run may name its agent (`agent:`), the identity its calls to the agent API are made as.
 */
function parseStep(input: unknown, name: 'run' | 'verify', at: string, problems: Problems): TaskSpec['run'] & TaskSpec['verify'] {
  const step = typeof input === 'string' ? { command: input } : input;
  const kinds = name === 'run' ? ['command', 'function', 'pool'] : ['command', 'function'];
  const exactlyOne = `${at}: ${name} must name exactly one of ${name === 'run' ? 'command, function or pool' : 'command or function'}${name === 'verify' ? ' (an artifact is released only after verification)' : ''}`;
  if (!isRecord(step)) {
    problems.push(exactlyOne);
    return {};
  }
  checkKeys(step, name === 'run' ? RUN_KEYS : VERIFY_KEYS, problems, at, `${name}.`);
  // null counts as absent, as text() reads it: `function: null` must not pass for a named function.
  if (kinds.filter((k) => step[k] != null).length !== 1) problems.push(exactlyOne);
  const command = text(step.command, `${at}: ${name}.command`, problems, { max: 10_000 });
  const fn = text(step.function, `${at}: ${name}.function`, problems);
  const pool = name === 'run' ? text(step.pool, `${at}: run.pool`, problems) : undefined;
  if (pool !== undefined && !POOL_PATTERN.test(pool)) problems.push(`${at}: run.pool must match ${POOL_PATTERN}`);
  const agent = name === 'run' ? text(step.agent, `${at}: run.agent`, problems, { max: 200 }) : undefined;
  if (agent !== undefined && pool !== undefined)
    problems.push(`${at}: run.agent names a worker run's agent; a pooled run's agent is whoever takes it, by its token`);
  const protect = name === 'verify' ? parseProtect(step.protect, `${at}: verify.protect`, problems) : undefined;
  return {
    ...(command === undefined ? {} : { command }),
    ...(fn === undefined ? {} : { function: fn }),
    ...(pool === undefined ? {} : { pool }),
    ...(agent === undefined ? {} : { agent }),
    ...(protect === undefined ? {} : { protect }),
  };
}

/**
 * T12: `verify.protect`, the repository paths the agent may not change (docs/tasks.md): each
 * a path or glob (`test/**`) relative to the repository's top, as git matches pathspecs.
 */
function parseProtect(input: unknown, where: string, problems: Problems): string[] | undefined {
  if (input === undefined || input === null) return undefined;
  if (!Array.isArray(input)) {
    problems.push(`${where} must be a list of paths`);
    return undefined;
  }
  if (input.length > MAX_PROTECTED_PATHS) problems.push(`${where} names more than ${MAX_PROTECTED_PATHS} paths`);
  const paths: string[] = [];
  input.slice(0, MAX_PROTECTED_PATHS).forEach((entry, i) => {
    const value = text(entry, `${where}[${i}]`, problems, { max: 4_096 });
    if (value === undefined) return;
    const segments = value.replace(/\/$/, '').split('/');
    if (value.startsWith('/') || value.startsWith(':') || segments.some((s) => s === '..' || s === '')) {
      problems.push(
        `${where}[${i}] must be a path inside the repository, relative to its top, with no '..' or empty part: ${quoted(value)}`,
      );
      return;
    }
    paths.push(segments.filter((s) => s !== '.').join('/') || '.');
  });
  return paths;
}

function parseTask(raw: unknown, where: string, problems: Problems): GraphTaskSpec | undefined {
  if (!isRecord(raw)) {
    problems.push(`${where} must be a mapping`);
    return undefined;
  }
  const key = text(raw.key, `${where}.key`, problems, { required: true });
  const at = key === undefined ? where : `task ${quoted(key)}`;
  checkKeys(raw, TASK_KEYS, problems, at);
  if (key !== undefined && !KEY_PATTERN.test(key)) problems.push(`${at}: key must match ${KEY_PATTERN}`);
  let dependsOn = raw.dependsOn ?? [];
  if (!Array.isArray(dependsOn) || dependsOn.some((d) => typeof d !== 'string')) {
    problems.push(`${at}: dependsOn must be a list of task keys`);
    dependsOn = [];
  }
  const deps = dependsOn as string[];
  if (deps.length > MAX_DEPENDENCIES_PER_TASK) problems.push(`${at}: more than ${MAX_DEPENDENCIES_PER_TASK} dependencies`);
  if (new Set(deps).size !== deps.length) problems.push(`${at}: dependsOn names a task twice`);
  if (key !== undefined && deps.includes(key)) problems.push(`${at}: depends on itself`);
  const spec: TaskSpec = {
    description: text(raw.description, `${at}: description`, problems, { max: 2_000 }) ?? key ?? '',
    run: parseStep(raw.run, 'run', at, problems),
    verify: parseStep(raw.verify, 'verify', at, problems),
  };
  if (raw.payload !== undefined) {
    try {
      spec.payload = toJson(raw.payload, 'payload');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      problems.push(`${at}: ${error.detail}`);
    }
  }
  let storable = true;
  const serialised = JSON.stringify(spec, (name: string, value: unknown) => {
    storable &&= isStorableText(name) && (typeof value !== 'string' || isStorableText(value));
    return value;
  });
  if (!storable) problems.push(`${at}: payload ${UNSTORABLE_TEXT}`);
  if (Buffer.byteLength(serialised) > MAX_TASK_SPEC_BYTES) problems.push(`${at}: spec is larger than ${MAX_TASK_SPEC_BYTES} bytes`);
  return key === undefined ? undefined : { key, spec, dependsOn: deps };
}

function parseTasks(input: unknown, problems: Problems): GraphTaskSpec[] {
  if (!Array.isArray(input) || input.length === 0) {
    problems.push('tasks must be a non-empty list');
    return [];
  }
  if (input.length > MAX_TASKS_PER_GRAPH) {
    problems.push(`a graph may hold at most ${MAX_TASKS_PER_GRAPH} tasks, this one has ${input.length}`);
    return [];
  }
  const tasks: GraphTaskSpec[] = [];
  const seen = new Set<string>();
  input.forEach((raw: unknown, index: number) => {
    const task = parseTask(raw, `tasks[${index}]`, problems);
    if (!task) return;
    if (seen.has(task.key)) problems.push(`task ${quoted(task.key)}: duplicate key`);
    seen.add(task.key);
    tasks.push(task);
  });
  for (const t of tasks) {
    for (const dep of t.dependsOn) if (!seen.has(dep)) problems.push(`task ${quoted(t.key)}: unknown dependency ${quoted(dep)}`);
  }
  // Self-dependencies are already named above; any other cycle is reported alongside every other problem.
  const cycle = findCycle(tasks.map((t) => ({ key: t.key, dependsOn: t.dependsOn.filter((d) => d !== t.key) })));
  if (cycle) problems.push(`dependency cycle: ${cycle.join(' -> ')}`);
  return tasks;
}

/**
 * Validates a graph as parsed from YAML or JSON, and fills in defaults. Unknown keys are refused
 * by name. Every problem is reported at once in one InvalidGraphError; nothing is written by a
 * caller that gets one.
 */
export function parseGraphSpec(input: unknown, options: { resolveRepo?: (repo: string) => string } = {}): GraphSpec {
  if (!isRecord(input)) throw new InvalidGraphError(['a graph must be a mapping with a `tasks` list']);
  const problems: Problems = [];
  checkKeys(input, GRAPH_KEYS, problems);
  // An empty `id:` in YAML is null: generated, as when it is left out.
  const id = input.id === undefined || input.id === null ? `g-${randomUUID().slice(0, 8)}` : text(input.id, 'id', problems);
  if (id && !KEY_PATTERN.test(id)) problems.push(`id ${quoted(id)} must match ${KEY_PATTERN} (lower case, digits, - and _)`);
  const repo = text(input.repo, 'repo', problems);
  const base = text(input.base, 'base', problems) ?? 'HEAD';
  const policy = parsePolicy(input.policy, problems);
  const tasks = parseTasks(input.tasks, problems);
  const runsCommands = tasks.some((t) => t.spec.run.command !== undefined || t.spec.verify.command !== undefined);
  if (runsCommands && (input.repo === undefined || input.repo === null)) {
    problems.push('repo is required when a task runs a command (the command runner works in a git worktree of it)');
  }
  if (problems.length) throw new InvalidGraphError(problems);
  return { id: id!, repo: repo && options.resolveRepo ? options.resolveRepo(repo) : repo, base, policy, tasks };
}
