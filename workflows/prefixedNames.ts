// After 0.1 the workflows schedule, start and signal by baton's prefixed names (`batonRunTask`,
// `batonTaskWorkflow`, `batonRecheckTask`; src/temporal/batonNames.ts). An execution whose history
// was recorded before replays it under 0.1's names, which sdk-core checks for activities and child
// workflows; it takes the prefixed names from its first workflow task on this code.
import { proxyActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import { isBatonName, unprefixedName } from '../src/temporal/batonNames.js';
import { hasPatch, PREFIXED_NAMES_PATCH } from './patches.js';

/**
 * `name` (prefixed) as this point of the execution must use it: 0.1's name while replaying a
 * history from before the patch. `patchLevel`: the execution's (workflows/patches.ts).
 */
export function batonName(name: string, patchLevel: number | undefined): string {
  return hasPatch(PREFIXED_NAMES_PATCH, patchLevel) ? name : unprefixedName(name);
}

/**
 * `proxyActivities`, scheduling each of baton's activities under `batonName` of its name, decided
 * when the activity is read: read it where it is called (`store.batonReadTask(...)`), never
 * destructure it at module load, where no workflow runs to decide.
 */
export function proxyBatonActivities<A>(options: ActivityOptions, patchLevel: number | undefined): ActivityInterfaceFor<A> {
  const byName = proxyActivities<Record<string, (...args: unknown[]) => Promise<unknown>>>(options);
  return new Proxy({} as ActivityInterfaceFor<A>, {
    get: (_, name) => (typeof name === 'string' && isBatonName(name) ? byName[batonName(name, patchLevel)] : undefined),
  });
}
