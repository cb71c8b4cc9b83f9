import { beforeAll } from 'vitest';
import { findBubblewrap, findSlirp4netns } from '../../src/runners/isolation/bubblewrap.js';

/**
 * What the isolation drills need of the host, checked before their tests: they fail with the fix,
 * never skip, because a skipped drill proves nothing. `.ci/run` runs as root and installs bubblewrap and slirp4netns.
 */
export function requireIsolationHost(needs: { root?: boolean; bubblewrap?: boolean; slirp4netns?: boolean }): void {
  beforeAll(async () => {
    if (needs.root && process.geteuid?.() !== 0) {
      throw new Error('this drill runs agents under per-run uids, which needs a root worker: run the tests as root (as .ci/run does)');
    }
    if (needs.bubblewrap && (await findBubblewrap()) === undefined) {
      throw new Error('this drill needs bubblewrap: apt-get install -y bubblewrap (as .ci/run does)');
    }
    if (needs.slirp4netns && (await findSlirp4netns()) === undefined) {
      throw new Error(
        "this drill runs agents on the 'outside' network, which needs slirp4netns: apt-get install -y slirp4netns (as .ci/run does)",
      );
    }
  });
}
