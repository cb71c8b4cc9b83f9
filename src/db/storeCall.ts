// The one way baton's TypeScript calls a store function (tasks, tool calls and objects alike):
// the statement is built here, and a database error becomes baton's typed error here
// (`fromDatabaseError`) and nowhere else.
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { fromDatabaseError, StaleClaimError } from '../errors.js';
import type { Queryable } from './queryable.js';

/** Who is writing, under which claim: the fence every owner write must match (T4). */
export interface Fence {
  taskId: string;
  owner: string;
  claimVersion: number;
}

/** The task as a refused owner write found it. */
interface ClaimHolder {
  status: string;
  owner: string | null;
  claimVersion: number;
}

/** Runs `SELECT * FROM baton.<fn>($1, ...)` with `args` as parameters and returns its rows. */
export async function callStore<R extends Record<string, any> = Record<string, any>>(
  db: Queryable,
  fn: string,
  args: readonly unknown[],
): Promise<R[]> {
  const text = `SELECT * FROM baton.${fn}(${args.map((_, i) => `$${i + 1}`).join(', ')})`;
  // A span of the trace the call is made in, when tracing is on (src/observability/tracing.ts); else nothing.
  return tracer.startActiveSpan(`baton.${fn}`, { attributes: { 'db.system': 'postgresql', 'db.operation': fn } }, async (span) => {
    let result: Awaited<ReturnType<Queryable['query']>>;
    try {
      result = await db.query<R>(text, args);
    } catch (error) {
      const failure = fromDatabaseError(error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: failure instanceof Error ? failure.message : String(failure) });
      throw failure;
    } finally {
      span.end();
    }
    return int8AsNumber(result) as R[];
  });
}

const tracer = trace.getTracer('baton');

/** pg's type id of int8 (bigint). */
const INT8_OID = 20;

/**
 * The rows with every int8 column a number, also from a connection that reads int8 as pg does by
 * default (a string, or a BigInt where a host parses it so): store values stay far below 2^53.
 */
function int8AsNumber(result: Awaited<ReturnType<Queryable['query']>>): Record<string, unknown>[] {
  const columns = result.fields?.filter((f) => f.dataTypeID === INT8_OID).map((f) => f.name) ?? [];
  for (const row of columns.length ? result.rows : []) {
    for (const column of columns) {
      const value = row[column];
      if (typeof value === 'string' || typeof value === 'bigint') row[column] = Number(value);
    }
  }
  return result.rows;
}

/** Runs a store function that returns one value (a boolean, a count, a status) and returns it. */
export async function callStoreValue<T>(db: Queryable, fn: string, args: readonly unknown[]): Promise<T> {
  const [row] = await callStore<Record<string, T>>(db, fn, args);
  return row![fn]!;
}

/**
 * Runs an owner's fenced write and returns its row. A function that refused the write has already
 * recorded the refusal as an event and answers `accepted = false` with the task as it is now
 * (`holderOf` reads that from the row): then this throws StaleClaimError.
 */
export async function callFenced<R extends { accepted: boolean } & Record<string, any>>(
  db: Queryable,
  fence: Fence,
  action: string,
  fn: string,
  args: readonly unknown[],
  holderOf: (row: R) => ClaimHolder,
): Promise<R> {
  const [row] = await callStore<R>(db, fn, args);
  if (!row!.accepted) throw new StaleClaimError(fence.taskId, fence.owner, fence.claimVersion, action, holderOf(row!));
  return row!;
}
