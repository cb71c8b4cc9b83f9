import { InvalidInputError } from './errors.js';

/** A JSON value, as parameters and results travel. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Deepest nesting of arrays and objects a JSON input may have; deeper would overflow the code that walks it. */
const MAX_JSON_DEPTH = 64;

/**
 * `value` as JSON, checked at the boundary (S3): plain objects, arrays, strings, finite numbers,
 * booleans and null, nested at most MAX_JSON_DEPTH deep. InvalidInputError names where it is not.
 * (`depth` is for its own recursion.)
 */
export function toJson(value: unknown, where: string, depth = 0): Json {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidInputError(`${where} is not a finite number`);
    return value;
  }
  if (typeof value === 'object' && depth >= MAX_JSON_DEPTH) {
    throw new InvalidInputError(`${where} is nested more than ${MAX_JSON_DEPTH} levels deep`);
  }
  if (Array.isArray(value)) return value.map((v, i) => toJson(v, `${where}[${i}]`, depth + 1));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    // As JSON.stringify does, a property set to undefined is left out.
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return Object.fromEntries(entries.map(([k, v]) => [k, toJson(v, `${where}.${k}`, depth + 1)]));
  }
  throw new InvalidInputError(`${where} is not JSON (${typeof value})`);
}
