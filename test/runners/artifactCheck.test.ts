// What the verifier checks of an artifact before running anything of it (SPEC T12, S6), on a real
// repository with commits made the way an agent could make them, plumbing included. The end-to-end
// cases, from an agent's seat, are in test/tasks/gamedVerification.test.ts.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/dev/run.js';
import { checkArtifact, simpleCommands } from '../../src/runners/artifactCheck.js';
import { git } from '../../src/runners/git.js';
import { OUTPUT_LINE_MAX_CHARS, runShell } from '../../src/runners/processes.js';
import { createScriptedRepo } from '../../src/testkit/scriptedRepo.js';

let repo: string;
let base: string;

/** A commit on `parents` whose tree is `parents[0]`'s plus `entries` (name -> content) at the top. */
async function commit(parents: string[], entries: Record<string, string>, options: { drop?: string[] } = {}): Promise<string> {
  const listing = (await git(repo, ['ls-tree', parents[0]!]))
    .split('\n')
    .filter((line) => line && !options.drop?.includes(line.split('\t')[1]!));
  for (const [name, content] of Object.entries(entries)) {
    const blob = (await runInput(['hash-object', '-w', '--stdin'], content)).trim();
    listing.push(`100644 blob ${blob}\t${name}`);
  }
  const tree = (await runInput(['mktree'], `${listing.join('\n')}\n`)).trim();
  return git(repo, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', 'agent']);
}

async function runInput(args: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', repo, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`git ${args.join(' ')} exited ${code}`))));
    child.stdin.end(input);
  });
}

/** A commit on `parent` with `entries` set at any depth: text for a file, `{ link }` for a symbolic link. */
async function commitPaths(parent: string, entries: Record<string, string | { link: string }>): Promise<string> {
  const env = { ...process.env, GIT_INDEX_FILE: path.join(repo, '.git', `index-${randomUUID()}`) };
  await run('git', ['-C', repo, 'read-tree', parent], { env });
  for (const [file, entry] of Object.entries(entries)) {
    const blob = (await runInput(['hash-object', '-w', '--stdin'], typeof entry === 'string' ? entry : entry.link)).trim();
    await run(
      'git',
      ['-C', repo, 'update-index', '--add', '--cacheinfo', `${typeof entry === 'string' ? '100644' : '120000'},${blob},${file}`],
      { env },
    );
  }
  const tree = (await run('git', ['-C', repo, 'write-tree'], { env })).stdout.trim();
  await rm(env.GIT_INDEX_FILE, { force: true });
  return git(repo, ['commit-tree', tree, '-p', parent, '-m', 'agent']);
}

const check = (revision: string, more: Partial<Parameters<typeof checkArtifact>[0]> = {}) =>
  checkArtifact({ repo, revision, baseCommit: base, pins: {}, protect: [], command: 'sh ./verify.sh', ...more });

beforeAll(async () => {
  repo = await createScriptedRepo({ 'README.md': '# scratch\n', 'verify.sh': 'test -f work.txt\n' });
  base = await git(repo, ['rev-parse', 'main']);
});
afterAll(() => rm(repo, { recursive: true, force: true }));

describe('the artifact check', () => {
  it('passes honest work and names what it refuses in every other case', async () => {
    expect(await check(await commit([base], { 'work.txt': 'done\n' }))).toBeUndefined();
    expect(await check('0'.repeat(40))).toBe(`revision ${'0'.repeat(40)} is not a commit in the graph's repository`);
    expect(await check('main')).toMatch(/is not a commit/); // only a full revision names exactly one artifact
    expect(await check(base)).toBe(`revision ${base} adds nothing to its base and pinned upstream revisions`);
    const emptyCommit = await git(repo, ['commit-tree', `${base}^{tree}`, '-p', base, '-m', 'nothing']);
    expect(await check(emptyCommit)).toMatch(/adds nothing/);
    expect(await check(await commit([base], { 'verify.sh': 'exit 0\n', 'work.txt': '' }))).toBe(
      'it changes what checks it: verify.sh (protected: verify.sh, **/.gitattributes)',
    );
    expect(await check(await commit([base], { 'work.txt': '' }, { drop: ['verify.sh'] }))).toMatch(/it changes what checks it: verify\.sh/);
  });

  it('protects what the verify command runs, not what it reads: that is the work it checks', async () => {
    const work = await commit([base], { 'result.txt': 'done\n', 'verify.sh': 'exit 0\n', 'run.js': '', check: '' });
    expect(await check(work, { command: 'grep -q done result.txt && test -f README.md' })).toBeUndefined();
    for (const command of ['sh ./verify.sh', 'bash -e verify.sh', 'FOO=1 ./verify.sh --fast', 'true; . ./verify.sh', "sh 'verify.sh'"]) {
      expect(await check(work, { command }), command).toBe(
        'it changes what checks it: verify.sh (protected: verify.sh, **/.gitattributes)',
      );
    }
    // A file the agent adds is its work, even one the command runs: the task may be to write that test.
    expect(await check(work, { command: 'node run.js && ./check' })).toBeUndefined();
    // Quoted text is not a command: node -e's script names no file of the tree.
    expect(await check(work, { command: `node -e "require('./verify.sh'); process.exit(0)"` })).toBeUndefined();
  });

  it('reads the command as a shell would: wrappers, options before the script, cd, sh -c', async () => {
    const started = await commitPaths(base, { 'sub/check.sh': 'true\n' });
    const work = await commitPaths(started, { 'verify.sh': 'exit 0\n', 'sub/check.sh': 'exit 0\n' });
    const refused = (file: string) => `it changes what checks it: ${file} (protected: ${file}, **/.gitattributes)`;
    const at = (command: string) => checkArtifact({ repo, revision: work, baseCommit: started, pins: {}, protect: [], command });
    for (const command of [
      'bash -o pipefail verify.sh',
      'timeout 60 sh ./verify.sh',
      'env -i FOO=1 /usr/bin/env bash verify.sh',
      "bash -c 'sh ./verify.sh'",
      'exec ./verify.sh',
    ]) {
      expect(await at(command), command).toBe(refused('verify.sh'));
    }
    expect(await at('cd sub && sh check.sh')).toBe(refused('sub/check.sh'));
  });

  it('protects what a protected file reaches through a link, and refuses a new .gitattributes (it changes what every checkout writes)', async () => {
    const started = await commitPaths(base, {
      'tools/verify.sh': 'test -f work.txt\n',
      scripts: { link: 'tools' },
      'run.sh': { link: 'tools/verify.sh' },
    });
    const editsTarget = await commitPaths(started, { 'tools/verify.sh': 'exit 0\n' });
    for (const command of ['sh ./run.sh', 'sh scripts/verify.sh']) {
      const at = await checkArtifact({ repo, revision: editsTarget, baseCommit: started, pins: {}, protect: [], command });
      expect(at, command).toMatch(/^it changes what checks it: tools\/verify\.sh \(protected: .*tools\/verify\.sh/);
    }
    const relinks = await commitPaths(started, { 'run.sh': { link: 'tools/other.sh' }, 'tools/other.sh': 'exit 0\n' });
    expect(await checkArtifact({ repo, revision: relinks, baseCommit: started, pins: {}, protect: [], command: 'sh ./run.sh' })).toMatch(
      /^it changes what checks it: run\.sh/,
    );
    const attributes = await commitPaths(started, { 'work.txt': 'done\n', '.gitattributes': 'verify.sh text eol=crlf\n' });
    expect(await checkArtifact({ repo, revision: attributes, baseCommit: started, pins: {}, protect: [], command: 'true' })).toBe(
      'it changes what checks it: .gitattributes (protected: **/.gitattributes)',
    );
  });

  it('refuses a tree no checkout may hold: .git in any spelling, . and .., over-long names', async () => {
    for (const [name, why] of [
      ['.git', 'a .git name'],
      ['.GIT', 'a .git name'],
      ['.git. ', 'a .git name'],
      ['git~1', 'a .git name'],
      ['..', 'a . or .. name'],
      ['n'.repeat(256), 'a name over 255 bytes'],
    ]) {
      expect(await check(await commit([base], { [name!]: 'planted\n' })), name).toMatch(
        new RegExp(`its tree holds what no checkout may: .*\\(${why!.replace('.', '\\.')}\\)`),
      );
    }
    expect(await check(await commit([base], { ['n'.repeat(255)]: 'long but fine\n' }))).toBeUndefined();
  });

  it('wants the base and every pin in the artifact, and protects a pinned upstream change to a protected file', async () => {
    const up = await commit([base], { 'up.txt': 'up\n', 'check-up.sh': 'true\n' });
    const other = await commit([base], { 'other.txt': 'other\n' });
    const pins = { other, up };
    const merged = await commit([await commit([up, other], { 'other.txt': 'other\n' })], { 'work.txt': 'done\n' });
    expect(await check(merged, { pins, protect: ['check-*.sh'] })).toBeUndefined();
    const withoutUp = await commit([other], { 'work.txt': 'done\n' });
    expect(await check(withoutUp, { pins })).toBe(
      `revision ${withoutUp} does not contain upstream up at ${up}, its pinned verified revision`,
    );
    const unrelated = await git(repo, ['commit-tree', `${base}^{tree}`, '-m', 'a history of its own']);
    expect(await check(unrelated)).toBe(`revision ${unrelated} does not contain its base ${base}`);
    const edited = await commit([merged], { 'check-up.sh': 'exit 0\n' });
    expect(await check(edited, { pins, protect: ['check-*.sh'] })).toBe(
      'it changes what checks it: check-up.sh (protected: check-*.sh, verify.sh, **/.gitattributes)',
    );
  });
});

describe('simpleCommands', () => {
  it('splits a command line into the words of its simple commands, honouring quotes and escapes', () => {
    expect(simpleCommands(`FOO=1 sh ./a.sh 'x; y' && node -e "p(\\"a b\\")" | grep q\\ r; (cd d) \n ./z`)).toEqual([
      ['FOO=1', 'sh', './a.sh', 'x; y'],
      ['node', '-e', 'p("a b")'],
      ['grep', 'q r'],
      ['cd', 'd'],
      ['./z'],
    ]);
    expect(simpleCommands("echo ''")).toEqual([['echo', '']]);
  });
});

describe("an agent's output", () => {
  it('is passed on in bounded pieces when it never ends a line, every byte of it', async () => {
    const lengths: number[] = [];
    const bytes = 8 * OUTPUT_LINE_MAX_CHARS + 123;
    const outcome = await runShell(`head -c ${bytes} /dev/zero | tr '\\0' a`, {
      cwd: repo,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      signal: new AbortController().signal,
      onLine: (line) => lengths.push(line.length),
    });
    expect(outcome.exitCode).toBe(0);
    expect(Math.max(...lengths)).toBe(OUTPUT_LINE_MAX_CHARS);
    expect(lengths.reduce((a, b) => a + b, 0)).toBe(bytes);
  });

  it('keeps a line of stdout whole when stderr has half a line pending (a shell error message written in parts)', async () => {
    const lines: string[] = [];
    const outcome = await runShell(`printf 'err-start' >&2; sleep 0.2; echo 'ATTACK out-line'; sleep 0.2; echo ' err-end' >&2`, {
      cwd: repo,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      signal: new AbortController().signal,
      onLine: (line) => lines.push(line),
    });
    expect(outcome.exitCode).toBe(0);
    expect(lines.sort()).toEqual(['ATTACK out-line', 'err-start err-end']);
  });
});
