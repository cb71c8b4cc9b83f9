// SPEC U6: the structured log of baton's long-running processes (worker, serve, dev): one JSON
// object a line on stderr (pino), with graph, task, claim version, worker and agent identity as
// fields where a record concerns them; readable lines instead when stderr is a terminal. The
// Temporal SDK's own records (its worker's, and activities' `log`) go through the same logger.
import { Writable } from 'node:stream';
import type { LogLevel as TemporalLogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { pino, type Logger, type Level } from 'pino';
import { readEnv } from '../config.js';
import { InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';

export type { Logger };

/** Environment variable: the lowest level logged (trace, debug, info, warn, error, fatal; default info). */
export const LOG_LEVEL_ENV = 'BATON_LOG_LEVEL';
/** Environment variable: `json` or `pretty` (default: pretty on a terminal, json otherwise). */
export const LOG_FORMAT_ENV = 'BATON_LOG_FORMAT';

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const FORMATS = ['json', 'pretty'] as const;

export interface LoggerOptions {
  /** (Default: `$BATON_LOG_LEVEL`, else info) */
  level?: string;
  /** (Default: `$BATON_LOG_FORMAT`, else pretty when stderr is a terminal, else json) */
  format?: string;
  /** Where the lines go. (Default: stderr) */
  destination?: NodeJS.WritableStream;
  /** Fields every record of this logger carries, e.g. `{ component: 'worker', worker: identity }`. */
  base?: Record<string, unknown>;
}

/** A logger as the environment configures it; a level or format it does not know is refused by name. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = (options.level ?? readEnv(LOG_LEVEL_ENV) ?? 'info').toLowerCase();
  if (!LEVELS.includes(level as Level))
    throw new InvalidInputError(`${LOG_LEVEL_ENV}=${level} is not a log level: use one of ${LEVELS.join(', ')}`);
  const format = (options.format ?? readEnv(LOG_FORMAT_ENV) ?? (process.stderr.isTTY ? 'pretty' : 'json')).toLowerCase();
  if (!(FORMATS as readonly string[]).includes(format))
    throw new InvalidInputError(`${LOG_FORMAT_ENV}=${format} is not a log format: use json or pretty`);
  const destination = options.destination ?? process.stderr;
  return pino(
    {
      level,
      base: { pid: process.pid, ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    format === 'pretty' ? prettyStream(destination) : destination,
  );
}

/** The line-oriented `Log` the rest of baton writes progress to, as info records of `logger`. */
export function loggerLog(logger: Logger): Log {
  return (line) => logger.info(line);
}

/**
 * The Temporal SDK's logger interface on `logger`: what activities and workflows log with their
 * context's `log` (baton's activities among them), and the SDK's own records, marked
 * `source: 'temporal'`. The SDK logs every worker state change at INFO; its own INFO records come
 * at debug, so a worker at the default level logs what baton does, and the SDK's warnings and errors.
 */
export function temporalLogger(logger: Logger): TemporalLogger {
  const levelOf: Record<TemporalLogLevel, Level> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };
  const bindings = logger.bindings();
  const write = (level: TemporalLogLevel, message: string, meta: LogMetadata = {}) => {
    const sdk = meta.sdkComponent === 'worker' || meta.sdkComponent === 'core';
    // A field the logger already carries with the same value (a worker's identity) is not written twice.
    const fields = Object.fromEntries(Object.entries(meta).filter(([key, value]) => bindings[key] !== value));
    logger[sdk && level === 'INFO' ? 'debug' : levelOf[level]](sdk ? { ...fields, source: 'temporal' } : fields, message);
  };
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}

/** Fields printed before the others on a readable line, when a record has them. */
const LEADING_FIELDS = ['graphId', 'taskKey', 'taskId', 'claimVersion', 'worker', 'agent'];
/** Fields a readable line leaves out: they are on every record, or already printed. */
const OMITTED_FIELDS = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'source', 'sdkComponent', 'namespace', 'taskQueue']);

/** A stream that turns each JSON record pino writes into `time level message key=value ...`. */
function prettyStream(destination: NodeJS.WritableStream): Writable {
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        let record: Record<string, unknown>;
        try {
          record = JSON.parse(line) as Record<string, unknown>;
        } catch {
          destination.write(`${line}\n`);
          continue;
        }
        const time = typeof record.time === 'string' ? record.time.slice(11, 23) : '';
        const level = String(record.level ?? '')
          .toUpperCase()
          .padEnd(5);
        const keys = [
          ...LEADING_FIELDS.filter((k) => k in record),
          ...Object.keys(record).filter((k) => !LEADING_FIELDS.includes(k) && !OMITTED_FIELDS.has(k)),
        ];
        const fields = keys.map((k) => `${k}=${typeof record[k] === 'string' ? record[k] : JSON.stringify(record[k])}`);
        destination.write(`${time} ${level} ${String(record.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}\n`);
      }
      done();
    },
  });
}
