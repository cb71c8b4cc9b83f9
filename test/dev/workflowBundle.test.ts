// A checkout bundles its workflow code once per change of its sources: every worker started after
// (`baton dev`, `baton worker`, the suite's worker processes) reuses the cached bundle instead of
// bundling for seconds. The cache must never hand out a bundle of other sources.
import { appendFile, cp, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { cachedWorkflowBundle, WORKFLOW_BUNDLE_CACHE, workflowCode, workflowSourceHash } from '../../src/dev/workflowBundle.js';
import { PACKAGE_ROOT } from '../../src/packageRoot.js';

const copies: string[] = [];
afterAll(async () => {
  await Promise.all(copies.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("a checkout's workflow bundle cache", () => {
  it('gives every later worker the bundle the run made, unchanged', async () => {
    const made = inject('workflowBundlePath');
    expect(path.dirname(made)).toBe(WORKFLOW_BUNDLE_CACHE);
    const before = (await stat(made)).mtimeMs;
    expect(await cachedWorkflowBundle()).toBe(made);
    expect(await workflowCode()).toEqual({ workflowBundle: { codePath: made } });
    expect((await stat(made)).mtimeMs).toBe(before);
  });

  it('is named after every source file, so an edit anywhere under src/ or workflows/ makes a new bundle', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'baton-bundle-hash-'));
    copies.push(copy);
    for (const dir of ['src', 'workflows']) await cp(path.join(PACKAGE_ROOT, dir), path.join(copy, dir), { recursive: true });
    await cp(path.join(PACKAGE_ROOT, 'package-lock.json'), path.join(copy, 'package-lock.json'));
    const original = await workflowSourceHash(copy);
    expect(original).toBe(await workflowSourceHash(PACKAGE_ROOT));

    // Not TypeScript: not part of any bundle.
    await writeFile(path.join(copy, 'src', 'notes.md'), 'anything');
    expect(await workflowSourceHash(copy)).toBe(original);

    await appendFile(path.join(copy, 'src', 'tasks', 'states.ts'), '\n// edited\n');
    const edited = await workflowSourceHash(copy);
    expect(edited).not.toBe(original);
    await appendFile(path.join(copy, 'workflows', 'index.ts'), '\n// edited\n');
    expect(await workflowSourceHash(copy)).not.toBe(edited);
    await appendFile(path.join(copy, 'package-lock.json'), ' ');
    expect(await workflowSourceHash(copy)).not.toBe(edited);
  });
});
