// Where this installation of baton lives: a checkout runs its TypeScript source (src/, through
// tsx), an installed package its compiled JavaScript (dist/src/), one folder deeper.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const compiled = path.extname(fileURLToPath(import.meta.url)) === '.js';

/** The package's folder: the checkout, or `node_modules/<name>` once installed. */
export const PACKAGE_ROOT = fileURLToPath(new URL(compiled ? '../../' : '../', import.meta.url));

/** The `baton` command of this installation. */
export const BATON_BIN = path.join(PACKAGE_ROOT, 'bin', 'baton.js');

/**
 * The folders that hold baton's code and its dependencies: the package's folder, and once
 * installed the `node_modules` folder it sits in (where npm puts its dependencies beside it).
 */
export function packageCodeDirs(): string[] {
  const installedIn = PACKAGE_ROOT.split(path.sep).lastIndexOf('node_modules');
  const dirs = [path.resolve(PACKAGE_ROOT)];
  if (installedIn > 0)
    dirs.push(
      PACKAGE_ROOT.split(path.sep)
        .slice(0, installedIn + 1)
        .join(path.sep),
    );
  return dirs;
}

/** This installation's version, from its package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}
