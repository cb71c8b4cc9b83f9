// After 0.1 the workflows schedule, start and signal by baton's prefixed names (`batonRunTask`,
// `batonTaskWorkflow`, `batonRecheckTask`; src/temporal/batonNames.ts). An execution whose history
// was recorded before replays it under 0.1's names, which sdk-core checks for activities and child
// workflows; it takes the prefixed names from its first workflow task on this code.
import { patched, proxyActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import { isBatonName, unprefixedName } from '../src/temporal/batonNames.js';

/** Marks executions that use the prefixed names; histories without it replay with 0.1's. */
const PREFIXED_NAMES_PATCH = 'baton-prefixed-names';

/** `name` (prefixed) as this point of the execution must use it: 0.1's name while replaying a history from before the patch. */
export function batonName(name: string): string {
  return patched(PREFIXED_NAMES_PATCH) ? name : unprefixedName(name);
}

/**
 * `proxyActivities`, scheduling each of baton's activities under `batonName` of its name, decided
 * when the activity is read: read it where it is called (`store.batonReadTask(...)`), never
 * destructure it at module load, where no workflow runs to decide.
 */
export function proxyBatonActivities<A>(options: ActivityOptions): ActivityInterfaceFor<A> {
  const byName = proxyActivities<Record<string, (...args: unknown[]) => Promise<unknown>>>(options);
  return new Proxy({} as ActivityInterfaceFor<A>, {
    get: (_, name) => (typeof name === 'string' && isBatonName(name) ? byName[batonName(name)] : undefined),
  });
}
