// The package as a user gets it: packed with `npm pack`, installed into a scratch project beside the
// project's own Temporal SDK (the lowest and the current version of the supported range), and run
// from there — never from this checkout. A command agent in the run calls the installed `baton`
// through the shim the runner puts on its PATH.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run } from '../../src/dev/run.js';
import { PACKAGE_ROOT, packageVersion } from '../../src/packageRoot.js';
import { cleanEnv, runCli, startCli } from '../helpers/cli.js';

const manifest = JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/** The Temporal SDK packages a host project brings itself (the optional testing package aside). */
const SDK_PACKAGES = Object.keys(manifest.peerDependencies).filter((name) => name !== '@temporalio/testing');
/** The lowest SDK version of the supported range, and the one this checkout develops against. */
const SDK_VERSIONS = {
  lowest: manifest.peerDependencies['@temporalio/worker']!.replace(/^\^/, ''),
  current: manifest.devDependencies['@temporalio/worker']!,
};

/** Long enough for `npm pack` (a full build) or `npm install` on a busy machine; a hang guard, not a speed limit. */
const NPM_TIMEOUT_MS = 900_000;

let work: string;
let tarball: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'baton-tarball-'));
  // Per-run agent users read the installed package, as they would in a project folder of mode 0755.
  await chmod(work, 0o755);
  await run('npm', ['pack', '--pack-destination', work], { cwd: PACKAGE_ROOT, timeoutMs: NPM_TIMEOUT_MS });
  tarball = path.join(work, `${manifest.name.replace('@', '').replace('/', '-')}-${packageVersion()}.tgz`);
}, NPM_TIMEOUT_MS);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const GRAPH = `# yaml-language-server: $schema=../node_modules/${manifest.name}/docs/graph.schema.json
id: one-task
repo: ./repo
tasks:
  - key: hello
    # The agent calls the installed baton (the runner's shim), then commits its work.
    run: baton api whoami > whoami.json && echo hello > hello.txt && git add hello.txt whoami.json && git -c user.name=agent -c user.email=agent@example.com commit -qm hello
    verify: grep -q hello hello.txt && test -s whoami.json
`;

/** A scratch project with the tarball and the Temporal SDK at `sdkVersion` installed, and a git repository for the graph. */
async function scratchProject(sdkVersion: string): Promise<string> {
  const dir = path.join(work, `project-${sdkVersion}`);
  await mkdir(path.join(dir, 'repo'), { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...SDK_PACKAGES.map((name) => `${name}@${sdkVersion}`)],
    { cwd: dir, timeoutMs: NPM_TIMEOUT_MS },
  );
  const git = (...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: path.join(dir, 'repo') });
  await git('init', '-q', '-b', 'main');
  await git('commit', '-q', '--allow-empty', '-m', 'start');
  await writeFile(path.join(dir, 'graph.yaml'), GRAPH);
  await writeFile(path.join(dir, 'broken.yaml'), GRAPH.replace('  - key: hello', '  - key: hello\n    dependsOn: [nobody]'));
  return dir;
}

describe.each(Object.entries(SDK_VERSIONS))('the packed package, installed beside Temporal SDK %s (%s)', (_, sdkVersion) => {
  let dir: string;
  let baton: { bin: string; cwd: string };
  const env = () => cleanEnv({ TEMPORAL_CLI_PATH: inject('temporalCliPath') });

  beforeAll(async () => {
    dir = await scratchProject(sdkVersion);
    baton = { bin: path.join(dir, 'node_modules', '.bin', 'baton'), cwd: dir };
  }, NPM_TIMEOUT_MS);

  it('has one copy of the SDK, the project’s own, and ships no sources, tests or fixtures', async () => {
    const installed = path.join(dir, 'node_modules', ...manifest.name.split('/'));
    const { stdout } = await run('find', [path.join(dir, 'node_modules'), '-path', '*/@temporalio/worker/package.json']);
    const copies = stdout.trim().split('\n');
    expect(copies).toHaveLength(1);
    expect(JSON.parse(await readFile(copies[0]!, 'utf8')).version).toBe(sdkVersion);
    const { stdout: files } = await run('find', [installed, '-type', 'f']);
    const shipped = files
      .trim()
      .split('\n')
      .map((f) => path.relative(installed, f))
      .filter((f) => !f.startsWith('node_modules/'));
    expect(shipped).toEqual(expect.arrayContaining(['LICENSE', 'CHANGELOG.md', 'dist/workflow-bundle.js', 'docs/graph.schema.json']));
    expect(shipped.filter((f) => f.startsWith('src/') || f.startsWith('test/') || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
  });

  it('answers --version and validates a graph file offline', async () => {
    const version = await runCli(['--version'], env(), baton);
    expect(version).toMatchObject({ code: 0, stdout: `${packageVersion()}\n` });
    const valid = await runCli(['validate', 'graph.yaml'], env(), baton);
    expect(valid.code, valid.output).toBe(0);
    expect(valid.stdout).toContain('valid graph one-task with 1 task(s)');
    const broken = await runCli(['validate', 'broken.yaml'], env(), baton);
    expect(broken.code).toBe(2);
    expect(broken.output).toMatch(/broken\.yaml:\d+:\d+: task 'hello': unknown dependency 'nobody'/);
  });

  it('runs a one-task graph on baton dev, its agent calling the installed baton', async () => {
    const dev = startCli(['dev', '--postgres-port', '0', '--temporal-port', '0', '--ui-port', '0'], env(), baton);
    try {
      await dev.waitForOutput(/Ready; worker polling/);
      // Another shell in the project finds the stack through .baton/dev-stack.json: no variables to copy.
      const submitted = await runCli(['submit', 'graph.yaml', '--watch'], cleanEnv({}), baton);
      expect(submitted.code, `${submitted.output}\n--- baton dev:\n${dev.output()}`).toBe(0);
      expect(submitted.output).toMatch(/hello\s+verified/);
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
    }
  });
});
