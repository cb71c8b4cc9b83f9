import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseDuration, parseNonNegativeInt, parsePort, parsePositiveInt } from '../../src/cli/options.js';
import { cleanEnv, runCli } from '../helpers/cli.js';

const NOT_WHOLE = ['', ' ', 'abc', '1.5', '-1', '+1', '1e3', '0x10', '9007199254740993'];

describe('the CLI option parsers', () => {
  it('parsePositiveInt takes whole numbers from 1, written in digits', () => {
    expect(['1', '50', ' 500 ', '9007199254740991'].map(parsePositiveInt)).toEqual([1, 50, 500, 9007199254740991]);
    for (const value of ['0', ...NOT_WHOLE]) {
      expect(() => parsePositiveInt(value), JSON.stringify(value)).toThrow(InvalidArgumentError);
    }
    expect(() => parsePositiveInt('0')).toThrow('not a positive integer: 0');
  });

  it('parseNonNegativeInt also takes 0; parsePort stops at 65535', () => {
    expect(['0', '7'].map(parseNonNegativeInt)).toEqual([0, 7]);
    for (const value of NOT_WHOLE) expect(() => parseNonNegativeInt(value), JSON.stringify(value)).toThrow(InvalidArgumentError);
    expect(['0', '65535'].map(parsePort)).toEqual([0, 65_535]);
    for (const value of ['65536', '-1', 'http']) expect(() => parsePort(value), value).toThrow('not a TCP port');
  });

  it('parseDuration takes minutes, hours or days and gives milliseconds', () => {
    expect(['90m', ' 12h ', '7d', '0m'].map(parseDuration)).toEqual([5_400_000, 43_200_000, 604_800_000, 0]);
    for (const value of ['', '7', 'd', '1.5h', '-1d', '2w', '10 m', '1234567d']) {
      expect(() => parseDuration(value), JSON.stringify(value)).toThrow(InvalidArgumentError);
    }
  });

  it('a bad value is refused by commander naming the option, before anything connects', async () => {
    const env = cleanEnv({ DATABASE_URL: 'postgresql://nobody:nothing@127.0.0.1:1/none' });
    const cases: Array<[string[], string]> = [
      [['drill', '--claim-trials', '0'], "error: option '--claim-trials <n>' argument '0' is invalid. not a positive integer: 0"],
      [
        ['drill', '--tool-kill-trials', '-1'],
        "error: option '--tool-kill-trials <n>' argument '-1' is invalid. not a non-negative integer: -1",
      ],
      [
        ['graphs', '--since', '2x'],
        "error: option '--since <duration>' argument '2x' is invalid. not a number of minutes, hours or days such as 90m, 12h or 30d: 2x",
      ],
      [
        ['graphs', '--status', 'done'],
        "error: option '--status <state>' argument 'done' is invalid. Allowed choices are verified, running",
      ],
      [
        ['object', 'write', 'k', '--as', 'a', '--version', '1.5', '--token', '1', '--content', 'x'],
        "error: option '--version <n>' argument '1.5' is invalid. not a non-negative integer: 1.5",
      ],
      [['dev', '--ui-port', '70000'], "error: option '--ui-port <port>' argument '70000' is invalid. not a TCP port: 70000"],
      [['worker', '--ops-port', 'metrics'], "error: option '--ops-port <port>' argument 'metrics' is invalid. not a TCP port: metrics"],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, env);
      expect(result.code, result.output).toBe(1);
      expect(result.output).toContain(message);
      expect(result.output).not.toMatch(/cannot reach Postgres/);
    }
  });

  it('refuses --deployment-metrics without --ops-port, where they would be served, before anything connects', async () => {
    const result = await runCli(
      ['worker', '--deployment-metrics'],
      cleanEnv({ DATABASE_URL: 'postgresql://nobody:nothing@127.0.0.1:1/none' }),
    );
    expect(result.code, result.output).toBe(2);
    expect(result.stderr.trim()).toBe('baton: invalid input: --deployment-metrics needs --ops-port: the metrics are served there');
  });
});
