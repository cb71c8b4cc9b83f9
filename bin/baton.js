#!/usr/bin/env node
// The `baton` command. Installed, it runs the compiled JavaScript in dist/. In a checkout (where
// src/ sits beside it) it runs dist/ too when `npm run build` made it from the sources as they are
// now, and otherwise the TypeScript source through tsx, so a change needs no build.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('..', import.meta.url);
const source = new URL('src/cli/main.ts', root);
if (existsSync(source) && !(await import('./checkoutBuild.js')).compiledIsCurrent(fileURLToPath(root))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/src/cli/main.js');
}
