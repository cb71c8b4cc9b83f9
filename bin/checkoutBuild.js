// Whether a checkout's compiled dist/ was built from its sources as they are now. `bin/baton.js`
// runs dist/ when it was (a third of the start-up of running the TypeScript source through tsx),
// and the test setup builds dist/ when it was not. The build stamps dist/ with the time it started
// reading the sources; any file or folder of what it compiles changed since (an mtime as late: an
// edit, or a file added, removed or renamed, which changes its folder's mtime) makes dist/ stale,
// as make decides.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What the build compiles (tsconfig.build.json's `include`, and the operator's page) and the settings it compiles with. */
const BUILD_INPUTS = ['src', 'workflows', 'activities', 'ui', 'tsconfig.json', 'tsconfig.build.json'];

/** The stamp a finished build leaves in dist/: the time it started (`fileSystemNow`), in ms since the epoch. */
export const BUILD_STAMP = path.join('dist', '.built-at');

/**
 * True when `root`'s dist/ was built by a build that finished, and nothing it compiles changed
 * since that build started.
 * @param {string} root the checkout's folder
 * @returns {boolean}
 */
export function compiledIsCurrent(root) {
  const stamp = path.join(root, BUILD_STAMP);
  if (!existsSync(stamp)) return false;
  const builtAt = Number(readFileSync(stamp, 'utf8'));
  if (!Number.isFinite(builtAt)) return false;
  for (const input of BUILD_INPUTS) {
    const top = path.join(root, input);
    if (!existsSync(top)) continue;
    const paths = [top];
    if (statSync(top).isDirectory()) for (const entry of readdirSync(top, { recursive: true })) paths.push(path.join(top, entry));
    if (paths.some((p) => statSync(p).mtimeMs >= builtAt)) return false;
  }
  return true;
}

/**
 * The time by the clock the file system stamps mtimes with, read from a file written in `dir` (a
 * coarse clock, some ms behind `Date.now()`: comparing mtimes with `Date.now()` could miss an edit).
 * @param {string} dir a folder to write in (created if missing)
 * @returns {number}
 */
export function fileSystemNow(dir) {
  mkdirSync(dir, { recursive: true });
  const probe = path.join(dir, `.now-${process.pid}`);
  writeFileSync(probe, '');
  const now = statSync(probe).mtimeMs;
  rmSync(probe);
  return now;
}

/**
 * Marks `root`'s dist/ as built from the sources as they were at `startedAt` (from `fileSystemNow`; the build calls it last).
 * @param {string} root
 * @param {number} startedAt
 */
export function writeBuildStamp(root, startedAt) {
  writeFileSync(path.join(root, BUILD_STAMP), `${startedAt}\n`);
}
