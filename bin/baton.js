#!/usr/bin/env node
// The `baton` command. Installed, it runs the compiled JavaScript in dist/. In a checkout (where
// src/ sits beside it) it runs the TypeScript source through tsx, so a change needs no build.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/src/cli/main.js');
}
