// The real browser the operator's page is tested and measured in: Chromium from the machine (Debian's
// `chromium`, as .ci/run installs it), driven by playwright-core, which downloads no browser of its own.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Names the Chromium to use instead of the one on PATH. */
const CHROMIUM_ENV = 'BATON_CHROMIUM';

/** The Chromium executable: $BATON_CHROMIUM, else `chromium` or `chromium-browser` on PATH; else an error saying how to get one. */
function chromiumPath(): string {
  const named = process.env[CHROMIUM_ENV];
  if (named) {
    if (!existsSync(named)) throw new Error(`${CHROMIUM_ENV}=${named}: no such file`);
    return named;
  }
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch {
      // not this one
    }
  }
  throw new Error(
    `no Chromium found for the operator page's browser tests: install it (Debian: apt-get install chromium; .ci/run does) or name one with ${CHROMIUM_ENV}`,
  );
}

/** Options for playwright-core's `chromium.launch` with that browser; as root (CI), without Chromium's own sandbox, which needs a user. */
export function chromiumLaunchOptions(): { executablePath: string; args: string[] } {
  return { executablePath: chromiumPath(), args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] };
}
