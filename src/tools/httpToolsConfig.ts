import { readEnv } from '../config.js';
import { InvalidInputError } from '../errors.js';
import { TOOL_NAME_PATTERN } from '../tasks/graphSpec.js';
import { createHttpTool, type HttpToolOptions } from './httpTool.js';
import type { ToolAdapter } from './types.js';

/**
 * HTTP tools of a `baton worker`, as JSON: tool name -> HttpToolOptions, e.g.
 * `{"payments":{"url":"https://pay.example/charges","lookupUrl":"https://pay.example/charges/by-key/{key}",
 * "headers":{"authorization":"Bearer ..."},"timeoutMs":5000,"idempotent":true,"ratePerMinute":60}}`. Agents never see it:
 * the runner strips BATON_* (except BATON_TASK_*, BATON_CLAIM*, BATON_UPSTREAM*) from their environment, then sets the run's BATON_URL, BATON_TOKEN, BATON_SOCKET.
 */
export const HTTP_TOOLS_ENV = 'BATON_HTTP_TOOLS';

const OPTION_NAMES = new Set(['url', 'method', 'lookupUrl', 'idempotent', 'headers', 'timeoutMs', 'ratePerMinute']);

/** Parses a BATON_HTTP_TOOLS value into adapters; InvalidInputError names what is wrong. */
export function parseHttpTools(text: string): Record<string, ToolAdapter> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(`${HTTP_TOOLS_ENV} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidInputError(`${HTTP_TOOLS_ENV} must be an object of tool name -> { url, lookupUrl?, ... }`);
  }
  const tools: Record<string, ToolAdapter> = {};
  for (const [name, value] of Object.entries(parsed)) {
    const where = `${HTTP_TOOLS_ENV}.${name}`;
    if (!TOOL_NAME_PATTERN.test(name))
      throw new InvalidInputError(`${where}: a tool name is 1 to 63 lowercase letters, digits, dashes or underscores`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInputError(`${where} must be an object`);
    const unknown = Object.keys(value).filter((k) => !OPTION_NAMES.has(k));
    if (unknown.length) throw new InvalidInputError(`${where}: unknown option(s) ${unknown.join(', ')}`);
    const o = value as Record<string, unknown>;
    if (typeof o.url !== 'string') throw new InvalidInputError(`${where}.url is required`);
    if (o.lookupUrl !== undefined && typeof o.lookupUrl !== 'string') throw new InvalidInputError(`${where}.lookupUrl must be a string`);
    if (o.method !== undefined && !['POST', 'PUT', 'PATCH'].includes(o.method as string))
      throw new InvalidInputError(`${where}.method must be POST, PUT or PATCH`);
    if (o.idempotent !== undefined && typeof o.idempotent !== 'boolean')
      throw new InvalidInputError(`${where}.idempotent must be true or false`);
    if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && (o.timeoutMs as number) > 0)) {
      throw new InvalidInputError(`${where}.timeoutMs must be a positive integer`);
    }
    if (o.ratePerMinute !== undefined && !(Number.isInteger(o.ratePerMinute) && (o.ratePerMinute as number) > 0)) {
      throw new InvalidInputError(`${where}.ratePerMinute must be a positive integer`);
    }
    if (
      o.headers !== undefined &&
      (typeof o.headers !== 'object' || o.headers === null || Object.values(o.headers).some((h) => typeof h !== 'string'))
    ) {
      throw new InvalidInputError(`${where}.headers must map header names to strings`);
    }
    try {
      tools[name] = createHttpTool(o as unknown as HttpToolOptions);
    } catch (error) {
      throw new InvalidInputError(`${where}: ${(error as InvalidInputError).detail ?? (error as Error).message}`);
    }
  }
  return tools;
}

/** The HTTP tools named by BATON_HTTP_TOOLS, or none when it is unset. */
export function httpToolsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<string, ToolAdapter> {
  const text = readEnv(HTTP_TOOLS_ENV, env);
  return text ? parseHttpTools(text) : {};
}
