import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { toActivityFailure, withActivityFailures } from '../activities/failures.js';
import {
  BatonError,
  ERROR_RESPONSES,
  errorResponse,
  errorResponseOf,
  fromDatabaseError,
  InvalidInputError,
  StaleClaimError,
  StoreUnavailableError,
} from '../src/errors.js';
import { StaleWriteError } from '../src/objects/errors.js';
import { PACKAGE_ROOT } from '../src/packageRoot.js';
import { ToolCallFailedError, ToolOutcomeUnknownError } from '../src/tools/errors.js';

const staleClaim = () => new StaleClaimError('g/t', 'a', 1, 'submit', { status: 'running', owner: 'b', claimVersion: 2 });
const objectState = {
  key: 'k',
  version: 1,
  token: 2,
  holder: 'D',
  holderSince: null,
  holderHeartbeatAt: null,
  holderSilent: false,
  silenceTimeoutMs: 1,
  offer: null,
  at: '',
};

describe('one error base', () => {
  it('gives every error a stable code with one response, and a default of no retry', () => {
    for (const error of [staleClaim(), new InvalidInputError('x'), new ToolCallFailedError('k', 't', 'no', false)]) {
      expect(error).toBeInstanceOf(BatonError);
      expect(ERROR_RESPONSES[error.code]).toBeDefined();
      expect(error.retryable).toBe(false);
    }
    expect(new ToolCallFailedError('k', 't', 'rate limited', true).retryable).toBe(true);
    expect(new ToolOutcomeUnknownError('k', 't', 'timeout').retryable).toBe(true);
  });

  it('derives the HTTP status and the exit code from the code; anything else is a fault', () => {
    expect(errorResponse(staleClaim())).toEqual({ httpStatus: 410, exitCode: 3 });
    expect(errorResponse(new InvalidInputError('x'))).toEqual({ httpStatus: 400, exitCode: 2 });
    expect(errorResponse(new Error('bug'))).toEqual({ httpStatus: 500, exitCode: 1 });
    expect(errorResponseOf('stale_claim')).toEqual({ httpStatus: 410, exitCode: 3 });
    expect(errorResponseOf('toString')).toEqual({ httpStatus: 500, exitCode: 1 });
    expect(errorResponseOf(undefined)).toEqual({ httpStatus: 500, exitCode: 1 });
  });

  it('derives the activity failure: class name as type, non-retryable unless a retry can help, details attached', async () => {
    expect(toActivityFailure(staleClaim())).toMatchObject({ type: 'StaleClaimError', nonRetryable: true });
    expect(toActivityFailure(new ToolOutcomeUnknownError('k', 't', 'timeout'))).toMatchObject({
      type: 'ToolOutcomeUnknownError',
      nonRetryable: false,
    });
    const refused = new StaleWriteError({
      key: 'k',
      actor: 'B',
      operation: 'write',
      refusal: 'token_moved',
      reason: 'role moved',
      state: objectState,
    });
    expect((toActivityFailure(refused) as ApplicationFailure).details?.[0]).toMatchObject({ refusal: 'token_moved', currentHolder: 'D' });
    const lost = new Error('connection terminated');
    expect(toActivityFailure(lost)).toBe(lost);
    const activities = withActivityFailures({ fail: async () => Promise.reject(staleClaim()) });
    await expect(activities.fail()).rejects.toBeInstanceOf(ApplicationFailure);
  });

  it('names a store that cannot be reached, by code or by the words pg uses without one, and nothing else', () => {
    const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    const unreachable: [unknown, boolean][] = [
      [withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), false],
      // Every address of a host name refused: Node reports them together.
      [Object.assign(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]), { code: 'ECONNREFUSED' }), false],
      [new AggregateError([withCode('EHOSTUNREACH'), withCode('ENETUNREACH')]), false],
      [withCode('ENOTFOUND', 'getaddrinfo ENOTFOUND db.internal'), false],
      [withCode('57P01', 'terminating connection due to administrator command'), true],
      [withCode('57P03', 'the database system is starting up'), false],
      [withCode('08006'), true],
      [withCode('53300', 'sorry, too many clients already'), false],
      [new Error('Connection terminated unexpectedly'), true],
      [new Error('Connection terminated due to connection timeout'), false],
      [new Error('timeout exceeded when trying to connect'), false],
      [new Error('Query read timeout'), true],
    ];
    for (const [error, mayHaveActed] of unreachable) {
      const mapped = fromDatabaseError(error);
      expect(mapped, String(error)).toBeInstanceOf(StoreUnavailableError);
      expect(mapped, String(error)).toMatchObject({ code: 'store_unavailable', retryable: true, mayHaveActed, cause: error });
      expect((mapped as Error).message).toMatch(/^PostgreSQL, baton's store, cannot be reached: /);
      expect((mapped as Error).message).not.toMatch(/127\.0\.0\.1|db\.internal/);
    }
    expect(errorResponse(fromDatabaseError(withCode('ECONNREFUSED')))).toEqual({ httpStatus: 503, exitCode: 1 });
    // A refusal of the database, a bug, or the same words with a code of its own are not.
    for (const error of [
      withCode('23505'),
      withCode('42501'),
      new Error('the store went away mid-call'),
      withCode('XX000', 'Connection terminated'),
    ]) {
      expect(fromDatabaseError(error), String(error)).not.toBeInstanceOf(StoreUnavailableError);
    }
  });

  it('is the one table docs/agents.md gives: every code with its HTTP status and exit code as ERROR_RESPONSES has them', async () => {
    const doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'agents.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (\d) \|/gm)];
    // One table: every code baton refuses with is in it.
    expect(rows.map((m) => m[1])).toEqual(expect.arrayContaining([...Object.keys(ERROR_RESPONSES), 'internal']));
    for (const [, code, httpStatus, exitCode] of rows) {
      expect(errorResponseOf(code), code).toEqual({ httpStatus: Number(httpStatus), exitCode: Number(exitCode) });
      expect(code === 'internal' || Object.hasOwn(ERROR_RESPONSES, code!), code).toBe(true);
    }
  });
});
