import { randomUUID } from 'node:crypto';
import { InvalidInputError } from '../errors.js';
import type { TaskSpec } from './types.js';

/** Most tasks one graph may hold. */
export const MAX_TASKS_PER_GRAPH = 10_000;
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
/** Default number of runs of one task (first run, reruns after rejection and reclaims after silence). */
export const MAX_ATTEMPTS_DEFAULT = 3;

const KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** What to do when verification rejects an artifact. */
export type VerificationFailurePolicy = 'rerun' | 'fail';

export interface GraphPolicy {
  /** Runs allowed per task, counting reclaims and reruns. (Default: 3) */
  maxAttempts: number;
  /** After a rejected verification: run the agent again (`rerun`) or fail the task. (Default: `rerun`) */
  onVerificationFailure: VerificationFailurePolicy;
  /** Owner silence that starts recovery, in ms. (Default: 10s) */
  heartbeatTimeoutMs: number;
}

export interface GraphTaskSpec {
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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

/** A cycle among `tasks`, as the list of keys around it, or undefined. */
export function findCycle(tasks: ReadonlyArray<{ key: string; dependsOn: readonly string[] }>): string[] | undefined {
  const deps = new Map(tasks.map((t) => [t.key, t.dependsOn]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (key: string): string[] | undefined => {
    if (state.get(key) === 'done') return undefined;
    if (state.get(key) === 'visiting') return [...path.slice(path.indexOf(key)), key];
    state.set(key, 'visiting');
    path.push(key);
    for (const dep of deps.get(key) ?? []) {
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(key, 'done');
    return undefined;
  };
  for (const t of tasks) {
    const cycle = visit(t.key);
    if (cycle) return cycle;
  }
  return undefined;
}

/**
 * Validates a graph as parsed from YAML or JSON, and fills in defaults. Every problem is reported
 * at once in one InvalidInputError; nothing is written by a caller that gets one.
 */
export function parseGraphSpec(input: unknown, options: { resolveRepo?: (repo: string) => string } = {}): GraphSpec {
  const problems: Problems = [];
  if (!isRecord(input)) throw new InvalidInputError('a graph must be a mapping with a `tasks` list');
  const id = input.id === undefined ? `g-${randomUUID().slice(0, 8)}` : text(input.id, 'id', problems);
  if (id && !KEY_PATTERN.test(id)) problems.push(`id '${id}' must match ${KEY_PATTERN} (lower case, digits, - and _)`);
  const repo = text(input.repo, 'repo', problems);
  const base = text(input.base, 'base', problems) ?? 'HEAD';
  const policyInput = input.policy === undefined ? {} : input.policy;
  if (!isRecord(policyInput)) problems.push('policy must be a mapping');
  const p = isRecord(policyInput) ? policyInput : {};
  const onVerificationFailure = p.onVerificationFailure ?? 'rerun';
  if (onVerificationFailure !== 'rerun' && onVerificationFailure !== 'fail') {
    problems.push(`policy.onVerificationFailure must be 'rerun' or 'fail', not ${JSON.stringify(onVerificationFailure)}`);
  }
  const policy: GraphPolicy = {
    maxAttempts: boundedInt(p.maxAttempts, 'policy.maxAttempts', MAX_ATTEMPTS_DEFAULT, MAX_ATTEMPTS_RANGE, problems),
    onVerificationFailure: onVerificationFailure === 'fail' ? 'fail' : 'rerun',
    heartbeatTimeoutMs: boundedInt(p.heartbeatTimeoutMs, 'policy.heartbeatTimeoutMs', HEARTBEAT_TIMEOUT_MS_DEFAULT, HEARTBEAT_TIMEOUT_MS_RANGE, problems),
  };

  if (!Array.isArray(input.tasks) || input.tasks.length === 0) {
    throw new InvalidInputError([...problems, 'tasks must be a non-empty list'].join('; '));
  }
  if (input.tasks.length > MAX_TASKS_PER_GRAPH) {
    throw new InvalidInputError(`a graph may hold at most ${MAX_TASKS_PER_GRAPH} tasks, this one has ${input.tasks.length}`);
  }
  const tasks: GraphTaskSpec[] = [];
  const seen = new Set<string>();
  input.tasks.forEach((raw: unknown, index: number) => {
    const where = `tasks[${index}]`;
    if (!isRecord(raw)) {
      problems.push(`${where} must be a mapping`);
      return;
    }
    const key = text(raw.key, `${where}.key`, problems, { required: true });
    if (!key) return;
    const at = `task '${key}'`;
    if (!KEY_PATTERN.test(key)) problems.push(`${at}: key must match ${KEY_PATTERN}`);
    if (seen.has(key)) problems.push(`${at}: duplicate key`);
    seen.add(key);
    const run = typeof raw.run === 'string' ? { command: raw.run } : raw.run;
    const verify = typeof raw.verify === 'string' ? { command: raw.verify } : raw.verify;
    if (!isRecord(run) || (run.command === undefined) === (run.function === undefined)) {
      problems.push(`${at}: run must name exactly one of command or function`);
    }
    if (!isRecord(verify) || (verify.command === undefined) === (verify.function === undefined)) {
      problems.push(`${at}: verify must name exactly one of command or function (an artifact is released only after verification)`);
    }
    const dependsOn = raw.dependsOn ?? [];
    if (!Array.isArray(dependsOn) || dependsOn.some((d) => typeof d !== 'string')) {
      problems.push(`${at}: dependsOn must be a list of task keys`);
      return;
    }
    if (dependsOn.length > MAX_DEPENDENCIES_PER_TASK) problems.push(`${at}: more than ${MAX_DEPENDENCIES_PER_TASK} dependencies`);
    if (new Set(dependsOn).size !== dependsOn.length) problems.push(`${at}: dependsOn names a task twice`);
    if (dependsOn.includes(key)) problems.push(`${at}: depends on itself`);
    const spec: TaskSpec = {
      ...raw,
      description: text(raw.description, `${at}: description`, problems, { max: 2_000 }) ?? key,
      run: isRecord(run)
        ? { command: text(run.command, `${at}: run.command`, problems, { max: 10_000 }), function: text(run.function, `${at}: run.function`, problems) }
        : {},
      verify: isRecord(verify)
        ? { command: text(verify.command, `${at}: verify.command`, problems, { max: 10_000 }), function: text(verify.function, `${at}: verify.function`, problems) }
        : {},
    };
    delete spec.key;
    delete spec.dependsOn;
    if (spec.run.command === undefined) delete spec.run.command;
    if (spec.run.function === undefined) delete spec.run.function;
    if (spec.verify.command === undefined) delete spec.verify.command;
    if (spec.verify.function === undefined) delete spec.verify.function;
    if (Buffer.byteLength(JSON.stringify(spec)) > MAX_TASK_SPEC_BYTES) problems.push(`${at}: spec is larger than ${MAX_TASK_SPEC_BYTES} bytes`);
    tasks.push({ key, spec, dependsOn: dependsOn as string[] });
  });
  for (const t of tasks) {
    for (const dep of t.dependsOn) if (!seen.has(dep)) problems.push(`task '${t.key}': unknown dependency '${dep}'`);
  }
  if (problems.length === 0) {
    const cycle = findCycle(tasks);
    if (cycle) problems.push(`dependency cycle: ${cycle.join(' -> ')}`);
  }
  if (problems.length) throw new InvalidInputError(problems.join('; '));
  if (tasks.some((t) => t.spec.run.command !== undefined || t.spec.verify.command !== undefined) && !repo) {
    throw new InvalidInputError('repo is required when a task runs a command (the command runner works in a git worktree of it)');
  }
  return { id: id!, repo: repo && options.resolveRepo ? options.resolveRepo(repo) : repo, base, policy, tasks };
}
