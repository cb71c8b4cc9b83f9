/** Longest piece of a string an error message quotes: a huge input must not make a huge message. */
const QUOTED_MAX_CHARS = 60;

/**
 * A value as an error message shows it, whatever it is: strings (cut short) as JSON, numbers,
 * booleans, null and BigInts as written, anything else by its kind. Never throws, as
 * JSON.stringify does on a BigInt or a cycle.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > QUOTED_MAX_CHARS ? `${value.slice(0, QUOTED_MAX_CHARS)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
