// baton's Temporal names (workflow types, activities, signals, queries) start with `baton`, so they
// sit beside a host's own in one worker (T9). Up to 0.1 they had no prefix, and executions started
// then keep their names until they end: the workflows and baton's worker map between the two.

/** What every Temporal name of baton starts with, followed by a capital: `batonRunTask`. */
const BATON_NAME = /^baton([A-Z])/;

/** Whether `name` is one of baton's prefixed names (a host's `runTask` or `batonish` is not). */
export function isBatonName(name: string): boolean {
  return BATON_NAME.test(name);
}

/** The name baton 0.1 gave what is now `name`: `batonRunTask` -> `runTask`. */
export function unprefixedName(name: string): string {
  if (!isBatonName(name)) throw new Error(`'${name}' is not one of baton's prefixed names`);
  return name.replace(BATON_NAME, (_, first: string) => first.toLowerCase());
}
