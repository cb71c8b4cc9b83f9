// Silence recorded on time: a holder past its object's silence timeout has lost the role on the
// database clock already (O2), but until now the loss was written only by the next call on the
// object or a `baton object sweep` by hand, so the log, `show`, the metrics and whoever waits on the
// object learnt of it late. Every worker sweeps (baton.object_sweep) once a second, so the loss is
// recorded, with its reason, within about a second of the timeout. Workers sweeping at once each
// skip the rows another has locked, and a loss is recorded once: the first sweep frees the role.
import type { Queryable } from '../db/queryable.js';
import { everyInterval, type Repeating } from '../everyInterval.js';
import type { Log } from '../log.js';
import { sweepSilentHolders } from './objectStore.js';

/** How often a worker records the losses of silent holders. */
const HOLDER_SWEEP_INTERVAL_MS = 1_000;

interface HolderSweepOptions {
  db: Queryable;
  /** Who records each loss (the event's actor): the worker's identity. */
  identity: string;
  log: Log;
}

/** Starts the sweep; `stop` ends it after the round in flight. */
export function sweepSilentHoldersOnTime(options: HolderSweepOptions): Repeating {
  return everyInterval(
    'silent-holder sweep',
    HOLDER_SWEEP_INTERVAL_MS,
    async () => {
      for (const lost of await sweepSilentHolders(options.db, options.identity)) {
        options.log(
          `silent-holder sweep: ${lost.silentHolder} lost the role on ${lost.key} (silent past its timeout; token ${lost.token})`,
        );
      }
    },
    options.log,
  );
}
