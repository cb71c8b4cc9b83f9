import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BATON_BIN } from '../packageRoot.js';
import { shellQuote } from '../shellQuote.js';

/**
 * Writes `<dir>/bin/baton` (`dir`: the work folder, or an isolated run's own folder), a script
 * that runs this very installation of baton with this Node, and returns its folder for the
 * agent's PATH: an agent can then run `baton tool call ...` with no install of its own and no
 * version drift from its worker.
 */
export async function ensureBatonShim(parent: string): Promise<string> {
  const dir = path.join(parent, 'bin');
  await mkdir(dir, { recursive: true });
  const target = path.join(dir, 'baton');
  // Unique per call: two runs starting in the same millisecond must not share a temporary file.
  const temp = `${target}.${process.pid}.${randomUUID()}`;
  await writeFile(temp, `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(BATON_BIN)} "$@"\n`, { mode: 0o755 });
  // Renamed into place, so a concurrent run never executes a half-written script.
  await rename(temp, target);
  return dir;
}
