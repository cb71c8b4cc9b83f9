// SPEC U6: the structured log's own rules: its levels and formats as the environment names them,
// refused by name when unknown; readable lines on a terminal; the Temporal SDK's records routed in.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/errors.js';
import { createLogger, temporalLogger } from '../../src/observability/logger.js';
import { cleanEnv, runCli } from '../helpers/cli.js';

/** A destination that keeps every line written to it. */
function lines() {
  const written: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      written.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { destination, written };
}

describe('the structured log', () => {
  it('writes one JSON object a line, with the fields it was given and those every record carries', () => {
    const { destination, written } = lines();
    const logger = createLogger({ format: 'json', level: 'info', destination, base: { component: 'worker', worker: 'w1' } });
    logger.info({ graphId: 'g1', taskKey: 'build', claimVersion: 2 }, 'claimed');
    logger.debug('not written at info');
    logger.flush();
    expect(written).toHaveLength(1);
    expect(JSON.parse(written[0]!)).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      pid: process.pid,
      component: 'worker',
      worker: 'w1',
      graphId: 'g1',
      taskKey: 'build',
      claimVersion: 2,
      msg: 'claimed',
    });
  });

  it('writes readable lines in the pretty format: time, level, message, then the task’s fields first', () => {
    const { destination, written } = lines();
    const logger = createLogger({ format: 'pretty', level: 'info', destination, base: { component: 'worker' } });
    logger.warn({ reason: 'owner silent', claimVersion: 1, graphId: 'g1', taskKey: 'build', worker: 'w2' }, 'reclaimed after silence');
    logger.flush();
    expect(written).toEqual([
      expect.stringMatching(
        /^\d\d:\d\d:\d\d\.\d{3} WARN  reclaimed after silence {2}graphId=g1 taskKey=build claimVersion=1 worker=w2 component=worker reason=owner silent$/,
      ),
    ]);
  });

  it('refuses a level or a format it does not know, naming the variable and what it takes', () => {
    expect(() => createLogger({ level: 'loud' })).toThrow(InvalidInputError);
    expect(() => createLogger({ level: 'loud' })).toThrow(
      'BATON_LOG_LEVEL=loud is not a log level: use one of trace, debug, info, warn, error, fatal',
    );
    expect(() => createLogger({ format: 'xml' })).toThrow('BATON_LOG_FORMAT=xml is not a log format: use json or pretty');
  });

  it('stops `baton worker` before it connects to anything when BATON_LOG_LEVEL is not a level', async () => {
    const result = await runCli(
      ['worker'],
      cleanEnv({ BATON_LOG_LEVEL: 'loud', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', TEMPORAL_ADDRESS: '127.0.0.1:1' }),
    );
    // Invalid input's exit code and line, as for any other (README, "The CLI").
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'baton: invalid input: BATON_LOG_LEVEL=loud is not a log level: use one of trace, debug, info, warn, error, fatal',
    );
  });

  it("routes the Temporal SDK's records in: its own marked and its INFO at debug, an activity's at their level", () => {
    const { destination, written } = lines();
    const logger = createLogger({ format: 'json', level: 'debug', destination, base: { worker: 'w1' } });
    const sdk = temporalLogger(logger);
    sdk.info('Worker state changed', { sdkComponent: 'worker', state: 'RUNNING' });
    sdk.info('claimed', { sdkComponent: 'activity', worker: 'w1', taskKey: 'build' });
    sdk.warn('Core warned', { sdkComponent: 'core' });
    logger.flush();
    const records = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({ level: 'debug', msg: 'Worker state changed', source: 'temporal', state: 'RUNNING' });
    expect(records[1]).toMatchObject({ level: 'info', msg: 'claimed', taskKey: 'build' });
    expect(records[1]).not.toHaveProperty('source');
    // The worker's identity the logger carries is written once, not again from the record.
    expect(written[1]!.match(/"worker"/g)).toHaveLength(1);
    expect(records[2]).toMatchObject({ level: 'warn', source: 'temporal' });
  });
});
