// Boundary checks (SPEC S3) for the object store's TypeScript callers. The SQL functions check the
// same things again; checking here gives a clear InvalidInputError before a round trip.
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
  type ObjectAccess,
} from './types.js';

/** The input of a call: an object of named fields. */
export function checkInput(input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidInputError(`the input must be an object of named fields, not ${describeValue(input)}`);
  }
  return input as Record<string, unknown>;
}

/** Text Postgres stores exactly as given (no NUL, no unpaired surrogate). */
function checkStorable(text: string, what: string): string {
  if (!isStorableText(text)) throw new InvalidInputError(`${what} ${UNSTORABLE_TEXT}`);
  return text;
}

export function checkKey(key: unknown): string {
  if (typeof key !== 'string' || !OBJECT_KEY_PATTERN.test(key)) {
    throw new InvalidInputError(
      `object key ${describeValue(key)} must be 1 to 200 letters, digits or ._/:@+- starting with a letter or digit`,
    );
  }
  return key;
}

export function checkActor(actor: unknown, what = 'actor'): string {
  if (typeof actor !== 'string' || actor.trim().length === 0 || actor.length > ACTOR_MAX_CHARS) {
    throw new InvalidInputError(`${what} must be a non-blank string of at most ${ACTOR_MAX_CHARS} characters`);
  }
  return checkStorable(actor, what);
}

/** Versions and tokens: non-negative safe integers, or at most `max` where the column is narrower. */
export function checkCounter(value: unknown, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
    const bound = max < Number.MAX_SAFE_INTEGER ? ` of at most ${max}` : '';
    throw new InvalidInputError(`${what} must be a non-negative integer${bound}, not ${describeValue(value)}`);
  }
  return value;
}

export function checkAccess(access: unknown): ObjectAccess {
  if (!OBJECT_ACCESS_LEVELS.includes(access as ObjectAccess)) {
    throw new InvalidInputError(`access must be one of ${OBJECT_ACCESS_LEVELS.join(', ')}, not ${describeValue(access)}`);
  }
  return access as ObjectAccess;
}

export function checkSilenceTimeout(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > SILENCE_TIMEOUT_MS_MAX) {
    throw new InvalidInputError(`silence timeout must be 1 ms to ${SILENCE_TIMEOUT_MS_MAX} ms, not ${describeValue(ms)}`);
  }
  return ms;
}

/** Exactly one of inline content and a content reference, within their limits; as SQL parameters. */
export function checkContent(input: {
  content?: string | undefined;
  contentRef?: string | undefined;
}): [content: string | null, contentRef: string | null] {
  const { content, contentRef } = input;
  if ((content === undefined) === (contentRef === undefined)) {
    throw new InvalidInputError('give exactly one of content and contentRef');
  }
  if (content !== undefined) {
    if (typeof content !== 'string' || Buffer.byteLength(content, 'utf8') > CONTENT_MAX_BYTES) {
      throw new InvalidInputError(
        `content must be a string of at most ${CONTENT_MAX_BYTES} bytes; store larger things elsewhere and pass contentRef`,
      );
    }
    return [checkStorable(content, 'content'), null];
  }
  if (typeof contentRef !== 'string' || contentRef.length === 0 || contentRef.length > CONTENT_REF_MAX_CHARS) {
    throw new InvalidInputError(`contentRef must be 1 to ${CONTENT_REF_MAX_CHARS} characters`);
  }
  return [null, checkStorable(contentRef, 'contentRef')];
}

/** Optional free text (reasons, notes), bounded so nobody stores content in it. */
export function checkNote(note: unknown, what: string): string | null {
  if (note === undefined || note === null) return null;
  if (typeof note !== 'string' || note.length > NOTE_MAX_CHARS) {
    throw new InvalidInputError(`${what} must be a string of at most ${NOTE_MAX_CHARS} characters`);
  }
  return checkStorable(note, what);
}
