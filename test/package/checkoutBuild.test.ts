// Which code `bin/baton.js` runs in a checkout: dist/ when the build made it from the sources as
// they are, else the TypeScript source through tsx. Run as real processes on a copy of bin/ in a
// scratch checkout whose two entry points say which of them ran.
import { appendFile, cp, mkdir, mkdtemp, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILD_STAMP, compiledIsCurrent, fileSystemNow, writeBuildStamp } from '../../bin/checkoutBuild.js';
import { run } from '../../src/dev/run.js';
import { PACKAGE_ROOT } from '../../src/packageRoot.js';

let root: string;

/** What `node bin/baton.js` in the scratch checkout printed: which entry point ran. */
async function ran(): Promise<string> {
  const { stdout } = await run(process.execPath, [path.join(root, 'bin', 'baton.js')], { cwd: root });
  return stdout.trim();
}

/**
 * Stamps the scratch checkout's dist/ as a build would that started after every change so far: on
 * the file system's next clock tick, as a change in the same tick as a build's start counts as later.
 */
async function build(): Promise<void> {
  const dist = path.join(root, 'dist');
  const changed = fileSystemNow(dist);
  while (fileSystemNow(dist) === changed) await new Promise((resolve) => setTimeout(resolve, 1));
  writeBuildStamp(root, fileSystemNow(dist));
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'baton-checkout-'));
  for (const file of ['baton.js', 'checkoutBuild.js']) await cp(path.join(PACKAGE_ROOT, 'bin', file), path.join(root, 'bin', file));
  await symlink(path.join(PACKAGE_ROOT, 'node_modules'), path.join(root, 'node_modules'));
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  await mkdir(path.join(root, 'src', 'cli'), { recursive: true });
  await writeFile(path.join(root, 'src', 'cli', 'main.ts'), "const from: string = 'source';\nconsole.log(from);\n");
  await mkdir(path.join(root, 'workflows'));
  await writeFile(path.join(root, 'workflows', 'index.ts'), 'export {};\n');
  await mkdir(path.join(root, 'dist', 'src', 'cli'), { recursive: true });
  await writeFile(path.join(root, 'dist', 'src', 'cli', 'main.js'), "console.log('compiled');\n");
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('bin/baton.js in a checkout', () => {
  it('runs the source until a build stamps dist/, then the compiled code', async () => {
    expect(await ran()).toBe('source');
    await build();
    expect(compiledIsCurrent(root)).toBe(true);
    expect(await ran()).toBe('compiled');
  });

  it('runs the source again once a file the build compiles is edited, added or removed', async () => {
    const edited = path.join(root, 'src', 'cli', 'main.ts');
    await build();
    await appendFile(edited, '// edited\n');
    expect(await ran()).toBe('source');

    await build();
    expect(await ran()).toBe('compiled');
    await writeFile(path.join(root, 'workflows', 'added.ts'), 'export {};\n');
    expect(compiledIsCurrent(root)).toBe(false);

    await build();
    expect(compiledIsCurrent(root)).toBe(true);
    await unlink(path.join(root, 'workflows', 'added.ts'));
    expect(compiledIsCurrent(root)).toBe(false);
    expect(await ran()).toBe('source');
  });

  it('runs the source when a build did not finish (no stamp), or the stamp is unreadable', async () => {
    await build();
    await writeFile(path.join(root, BUILD_STAMP), 'not a time\n');
    expect(await ran()).toBe('source');
    await unlink(path.join(root, BUILD_STAMP));
    expect(await ran()).toBe('source');
  });

  it('runs the compiled code where there is no source: the installed package', async () => {
    const installed = await mkdtemp(path.join(tmpdir(), 'baton-installed-'));
    try {
      // Only bin/baton.js is packed: the installed command never reads bin/checkoutBuild.js.
      await cp(path.join(root, 'bin', 'baton.js'), path.join(installed, 'bin', 'baton.js'));
      await cp(path.join(root, 'dist'), path.join(installed, 'dist'), { recursive: true });
      await writeFile(path.join(installed, 'package.json'), JSON.stringify({ type: 'module' }));
      const { stdout } = await run(process.execPath, [path.join(installed, 'bin', 'baton.js')], { cwd: installed });
      expect(stdout.trim()).toBe('compiled');
    } finally {
      await rm(installed, { recursive: true, force: true });
    }
  });
});
