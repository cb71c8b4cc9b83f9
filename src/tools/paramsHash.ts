import { createHash } from 'node:crypto';
import { InvalidInputError } from '../errors.js';
import { toJson, type Json } from '../json.js';

/** Largest parameters of one tool call, serialised, in bytes; large inputs belong in files or the tool. */
const MAX_TOOL_PARAMS_BYTES = 64 * 1024;

/** JSON with object keys sorted, so equal parameters hash equally whatever their key order. */
function canonicalJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Validates `params` at the boundary (S3) and returns `sha256:<hex>` of their canonical JSON. */
export function paramsHash(params: unknown): string {
  let text: string;
  try {
    text = canonicalJson(toJson(params, 'params'));
  } catch (error) {
    throw error instanceof InvalidInputError ? error : new InvalidInputError(`params: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_TOOL_PARAMS_BYTES) {
    throw new InvalidInputError(`params are ${Buffer.byteLength(text)} bytes; at most ${MAX_TOOL_PARAMS_BYTES} (pass a reference instead)`);
  }
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
