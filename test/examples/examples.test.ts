// The examples as a user runs them: each one a process (`node --import tsx`, which resolves
// `@batonhq/baton` to the public entry through the tsconfig's path mapping) on the suite's Postgres
// and Temporal server, its outcome read from the JSON line it prints last.
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, inject, it } from 'vitest';
import { eventRead } from '../../src/db/sql/reads.js';
import { run } from '../../src/dev/run.js';
import { PACKAGE_ROOT } from '../../src/packageRoot.js';
import { cleanEnv } from '../helpers/cli.js';
import { useTestDatabase } from '../helpers/db.js';

const EXAMPLES = path.join(PACKAGE_ROOT, 'examples');
/** A hang guard: an example whose workflows no worker runs waits for ever. */
const EXAMPLE_TIMEOUT_MS = 300_000;

const db = useTestDatabase();

/** Runs `examples/<file>` on this file's database and a task queue of its own, and parses what it printed last. */
async function runExample(file: string): Promise<unknown> {
  const env = cleanEnv({
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TASK_QUEUE: `example-${randomUUID()}`,
  });
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(EXAMPLES, file)], {
    cwd: PACKAGE_ROOT,
    env,
    timeoutMs: EXAMPLE_TIMEOUT_MS,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

/** Every module an example file imports or re-exports. */
async function importsOf(file: string): Promise<string[]> {
  const source = ts.createSourceFile(file, await readFile(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  return source.statements.flatMap((s) =>
    (ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)
      ? [s.moduleSpecifier.text]
      : [],
  );
}

describe('examples/', () => {
  // They typecheck against that entry in `npm run lint` (the root tsconfig includes examples/ and maps the package name to it).
  it('reach baton only through its public entry', async () => {
    const files = (await readdir(EXAMPLES, { recursive: true })).filter((f) => f.endsWith('.ts')).map((f) => path.join(EXAMPLES, f));
    expect(files.map((f) => path.relative(EXAMPLES, f))).toEqual(
      expect.arrayContaining(['embed-worker.ts', 'typescript-graph.ts', 'shared-object.ts']),
    );
    for (const file of files) {
      for (const specifier of await importsOf(file)) {
        const outside = specifier.startsWith('.') && path.relative(EXAMPLES, path.resolve(path.dirname(file), specifier)).startsWith('..');
        const allowed = specifier === '@batonhq/baton' || specifier.startsWith('@temporalio/') || specifier.startsWith('node:');
        expect(!outside && (allowed || specifier.startsWith('.')), `${path.relative(EXAMPLES, file)} imports '${specifier}'`).toBe(true);
      }
    }
  });

  it("embed-worker: one plugin adds baton to the host's worker, which runs the host's workflow and a baton graph", async () => {
    const outcome = await runExample('embed-worker.ts');
    expect(outcome).toEqual({
      greeting: 'Hello, Temporal!',
      graph: {
        graphId: expect.stringMatching(/^hello-[0-9a-f]{8}$/),
        verified: [expect.stringMatching(/^hello-[0-9a-f]{8}\/write$/)],
        failed: [],
        stale: [],
        blocked: [],
      },
    });
  });

  it('typescript-graph: function agents and verifiers run a graph; a rejected artifact is run again before its dependent starts', async () => {
    const { result, tasks } = (await runExample('typescript-graph.ts')) as {
      result: { graphId: string; verified: string[]; failed: string[]; blocked: string[] };
      tasks: { key: string; status: string; claimVersion: number; verifiedRevision: string; upstreamRevisions: Record<string, string> }[];
    };
    expect(result).toMatchObject({ verified: expect.arrayContaining([expect.any(String)]), failed: [], blocked: [] });
    expect(result.verified).toHaveLength(3);
    const byKey = Object.fromEntries(tasks.map((t) => [t.key, t]));
    expect(Object.values(byKey).map((t) => t.status)).toEqual(['verified', 'verified', 'verified']);
    expect(byKey.parsing!.claimVersion).toBe(2);
    expect(byKey.tests!.upstreamRevisions).toEqual({ request: byKey.request!.verifiedRevision, parsing: byKey.parsing!.verifiedRevision });
    const kinds = (await eventRead(db.pool, 'task', `${result.graphId}/parsing`)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'rejected')).toHaveLength(1);
  });

  it('shared-object: the writer that lost the role is refused with the reason, and the refusal is on the record', async () => {
    const outcome = await runExample('shared-object.ts');
    expect(outcome).toEqual({
      content: '1. tag\n2. build\n',
      version: 2,
      refusal: expect.stringMatching(/role moved to reviewer at .*: taken over/),
      events: expect.arrayContaining(['created', 'taken', 'written', 'taken_over', 'stale_write_refused']),
    });
  });
});
