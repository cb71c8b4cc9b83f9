// The one schema of shared-object input (SPEC S3): what each object operation takes, checked the
// same way whether it comes through the agent API (src/api/operations.ts, which also publishes it
// as JSON Schema) or from the store's TypeScript callers (src/objects/objectStore.ts, the CLI, the
// Temporal activities). The SQL functions check the same things again; checking here gives a clear
// InvalidInputError before a round trip. Every schema is strict: a field it does not name is refused.
import { z } from 'zod';
import { describeValue } from '../describeValue.js';
import { InvalidInputError } from '../errors.js';
import { isStorableText, UNSTORABLE_TEXT } from '../storableText.js';
import {
  ACTOR_MAX_CHARS,
  CONTENT_MAX_BYTES,
  CONTENT_REF_MAX_CHARS,
  NOTE_MAX_CHARS,
  OBJECT_ACCESS_LEVELS,
  OBJECT_KEY_PATTERN,
  SILENCE_TIMEOUT_MS_MAX,
} from './types.js';

/** Largest event number and log limit: they are Postgres integers. */
const PG_INTEGER_MAX = 2 ** 31 - 1;
/** Most events one call to the log may ask for. */
const OBJECT_LOG_LIMIT_MAX = 10_000;

/**
 * A rule as a refusal states it, with the value that broke it (`object keys are ..., not "../x"`),
 * after zod's own words for a value of the wrong type (`Invalid input: expected number, received string`).
 */
const rule = (text: string, showValue = true) => ({
  error: (issue: z.core.$ZodRawIssue) => {
    const stated = showValue ? `${text}, not ${describeValue(issue.input)}` : text;
    if (issue.code !== 'invalid_type') return stated;
    const typeError = z.config().localeError?.(issue);
    const typeMessage = typeof typeError === 'string' ? typeError : typeError?.message;
    return typeMessage ? `${typeMessage}: ${stated}` : stated;
  },
});

/** A string Postgres stores exactly as given (no NUL, no unpaired surrogate). */
export const storableString = (params?: Parameters<typeof z.string>[0]) => z.string(params).refine(isStorableText, UNSTORABLE_TEXT);

const KEY_RULE = 'object keys are 1 to 200 letters, digits or ._/:@+- and start with a letter or digit';
const key = z.string(rule(KEY_RULE)).regex(OBJECT_KEY_PATTERN, rule(KEY_RULE));
const COUNTER_RULE = 'a non-negative integer';
/** Versions, tokens, suggestion ids: non-negative safe integers. */
const counter = z
  .number(rule(COUNTER_RULE))
  .int(rule(COUNTER_RULE))
  .nonnegative(rule(COUNTER_RULE))
  .max(Number.MAX_SAFE_INTEGER, rule(COUNTER_RULE));
const IDENTITY_RULE = `a non-blank string of at most ${ACTOR_MAX_CHARS} characters`;
/** An actor's identity: a grantee, a successor, the caller itself. */
const identitySchema = storableString(rule(IDENTITY_RULE))
  .min(1, rule(IDENTITY_RULE))
  .max(ACTOR_MAX_CHARS, rule(IDENTITY_RULE))
  // Empty is refused by min(1), stated in the JSON Schema; blank only by this.
  .refine((s) => s.length === 0 || s.trim().length > 0, rule(IDENTITY_RULE));
/** Free text (reasons, notes), bounded so nobody stores content in it. */
const note = storableString(rule(`a string of 1 to ${NOTE_MAX_CHARS} characters`, false))
  .min(1, `a string of 1 to ${NOTE_MAX_CHARS} characters`)
  .max(NOTE_MAX_CHARS, `a string of 1 to ${NOTE_MAX_CHARS} characters`);
const CONTENT_RULE = `a string of at most ${CONTENT_MAX_BYTES} bytes; store larger things elsewhere and pass contentRef`;
const content = storableString(rule(CONTENT_RULE, false)).refine((s) => Buffer.byteLength(s, 'utf8') <= CONTENT_MAX_BYTES, CONTENT_RULE);
const CONTENT_REF_RULE = `1 to ${CONTENT_REF_MAX_CHARS} characters`;
const contentRef = storableString(rule(CONTENT_REF_RULE, false)).min(1, CONTENT_REF_RULE).max(CONTENT_REF_MAX_CHARS, CONTENT_REF_RULE);
/** Most paths one object may reserve (U11). */
const MAX_RESERVED_PATHS = 100;
const RESERVED_PATH_RULE = "a path or glob relative to the repository's top, of 1 to 4096 characters, with no '..', '.' or empty part";
/** U11: a path an object reserves, as `verify.protect` names paths: `src/api/**`. */
const reservedPath = storableString(rule(RESERVED_PATH_RULE))
  .min(1, RESERVED_PATH_RULE)
  .max(4096, RESERVED_PATH_RULE)
  .refine((p) => !/^[/:]/.test(p) && !/\/\.\.?\//.test(`/${p}/`) && !p.includes('//'), RESERVED_PATH_RULE);
const ACCESS_RULE = `one of ${OBJECT_ACCESS_LEVELS.join(', ')}`;
const access = z.enum(OBJECT_ACCESS_LEVELS, rule(ACCESS_RULE));
const SILENCE_RULE = `1 ms to ${SILENCE_TIMEOUT_MS_MAX} ms`;
const silenceTimeoutMs = z
  .number(rule(SILENCE_RULE))
  .int(rule(SILENCE_RULE))
  .min(1, rule(SILENCE_RULE))
  .max(SILENCE_TIMEOUT_MS_MAX, rule(SILENCE_RULE));
const PG_INTEGER_RULE = `a non-negative integer of at most ${PG_INTEGER_MAX}`;
const afterSeq = z
  .number(rule(PG_INTEGER_RULE))
  .int(rule(PG_INTEGER_RULE))
  .nonnegative(rule(PG_INTEGER_RULE))
  .max(PG_INTEGER_MAX, rule(PG_INTEGER_RULE));
const LIMIT_RULE = `an integer from 1 to ${OBJECT_LOG_LIMIT_MAX}`;
const limit = z.number(rule(LIMIT_RULE)).int(rule(LIMIT_RULE)).min(1, rule(LIMIT_RULE)).max(OBJECT_LOG_LIMIT_MAX, rule(LIMIT_RULE));

const OBJECT_RULE = 'the input must be an object of named fields';
const fields = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape, rule(OBJECT_RULE));

/** Exactly one of content and contentRef: enforced, and stated in the JSON Schema (OpenAPI, MCP). */
function withContent<T extends z.ZodRawShape>(shape: T) {
  return fields({ ...shape, content: content.optional(), contentRef: contentRef.optional() })
    .refine((v) => {
      const given = v as { content?: unknown; contentRef?: unknown };
      return (given.content === undefined) !== (given.contentRef === undefined);
    }, 'give exactly one of content and contentRef')
    .meta({ oneOf: [{ required: ['content'] }, { required: ['contentRef'] }] });
}

/** The input of every object operation, by the operation's name (`object.<name>` in the agent API). */
export const OBJECT_INPUTS = {
  create: fields({
    key,
    content: content.optional(),
    contentRef: contentRef.optional(),
    silenceTimeoutMs: silenceTimeoutMs.optional(),
    defaultAccess: access.optional(),
  })
    .refine((v) => v.content === undefined || v.contentRef === undefined, 'give at most one of content and contentRef')
    .meta({ anyOf: [{ properties: { content: false } }, { properties: { contentRef: false } }] }),
  grant: fields({ key, grantee: identitySchema, access }),
  reserve: fields({ key, paths: z.array(reservedPath).max(MAX_RESERVED_PATHS, rule(`at most ${MAX_RESERVED_PATHS} paths`)) }),
  show: fields({ key }),
  read: fields({ key }),
  check: fields({ key }),
  log: fields({ key, afterSeq: afterSeq.optional(), limit: limit.optional() }),
  take: fields({ key, reason: note.optional() }),
  write: withContent({ key, version: counter, token: counter }),
  heartbeat: fields({ key, token: counter }),
  release: fields({ key, token: counter, reason: note.optional() }),
  offer: fields({ key, token: counter, version: counter, successor: identitySchema }),
  accept: fields({ key, version: counter }),
  decline: fields({ key, reason: note.optional() }),
  withdraw: fields({ key, token: counter }),
  suggest: withContent({ key, baseVersion: counter, note: note.optional() }),
  approve: fields({ key, token: counter, suggestionId: counter }),
} as const;

export type ObjectOperation = keyof typeof OBJECT_INPUTS;

/** One line per problem, each naming where it is; `unexpected` explains a field the schema does not take. */
export function describeInputProblems(error: z.ZodError, unexpected: (keys: string[]) => string = () => ''): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') return `unexpected field(s) ${issue.keys.join(', ')}${unexpected(issue.keys)}`;
      const where = issue.path.length ? issue.path.join('.') : 'input';
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}

/** A field that tries to name the actor: the actor is never part of an object call's input. */
const namesActor = (keys: string[]) =>
  keys.some((k) => /actor|owner|identity|as|user/i.test(k)) ? ': the actor is given apart from the input, never in it' : '';

/** `operation`'s input, validated, or InvalidInputError naming every problem (the store's TypeScript callers). */
export function parseObjectInput<O extends ObjectOperation>(operation: O, input: unknown): z.output<(typeof OBJECT_INPUTS)[O]> {
  const parsed = OBJECT_INPUTS[operation].safeParse(input);
  if (!parsed.success) throw new InvalidInputError(`object ${operation}: ${describeInputProblems(parsed.error, namesActor)}`);
  return parsed.data as z.output<(typeof OBJECT_INPUTS)[O]>;
}

/** The actor of a store call (the authenticated caller), or InvalidInputError saying what `what` must be. */
export function checkActor(actor: unknown, what = 'actor'): string {
  const parsed = identitySchema.safeParse(actor);
  if (!parsed.success) throw new InvalidInputError(`${what}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  return parsed.data;
}
