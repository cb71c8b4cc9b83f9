// `npm run build` (also before `npm pack`): compiles baton into dist/ as the installed package runs
// it: the JavaScript and its type declarations, the SQL beside the code that reads it, the
// workflow bundle, prebuilt so an installed worker starts without bundling, and the operator's
// page (ui/, bundled with everything it uses into dist/ui). Last, the stamp that
// tells a checkout's `bin/baton.js` that dist/ holds its sources as they are (bin/checkoutBuild.js).
import { execFileSync } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileSystemNow, writeBuildStamp } from '../bin/checkoutBuild.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = path.join(root, 'dist');
const step = (what: string) => process.stderr.write(`build: ${what}\n`);

step('removing dist/');
await rm(dist, { recursive: true, force: true });
const startedAt = fileSystemNow(dist);
step('compiling TypeScript');
execFileSync(
  process.execPath,
  [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);
step('copying the SQL');
for (const sql of ['migrations', 'functions', 'schema.sql'])
  await cp(path.join(root, 'src', 'db', sql), path.join(dist, 'src', 'db', sql), { recursive: true });
step('bundling the workflows');
// The compiled module, so the bundle holds the compiled workflows and records the SDK it was built with.
const { writePrebuiltWorkflowBundle } = (await import(
  path.join(dist, 'src', 'dev', 'workflowBundle.js')
)) as typeof import('../src/dev/workflowBundle.js');
await writePrebuiltWorkflowBundle();
step("bundling the operator's page");
const { build } = await import('vite');
await build({ configFile: path.join(root, 'ui', 'vite.config.ts') });
writeBuildStamp(root, startedAt);
step('done');
