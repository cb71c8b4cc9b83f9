// Postgres text and jsonb hold UTF-8 without NUL. A JavaScript string may hold what they cannot: a
// NUL character, and a UTF-16 surrogate without its pair (jsonb refuses it; text would silently
// store U+FFFD instead). Inputs are checked against this at the boundary, before any write.
const UNSTORABLE = /\0|\p{Cs}/u;

/**
 * The same rule as JSON Schema states it (ECMA-262 patterns with the `u` flag, so a surrogate pair
 * is one character): no NUL and no unpaired surrogate. The agent API's schemas publish it.
 */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';

/** Why a string that is not storable text is refused, after its name. */
export const UNSTORABLE_TEXT = 'contains a NUL character or an unpaired surrogate, which Postgres cannot store';

/** Whether Postgres stores `text` exactly as given: no NUL character and no unpaired surrogate. */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}
