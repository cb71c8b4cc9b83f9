// T12: what the verifier checks of an artifact before it runs anything of it. The agent may not
// have edited what checks it, dropped the work it was built on, handed in nothing, or brought in a
// tree that no checkout can hold safely; each is a rejection with its reason, never a retry.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { run } from '../dev/run.js';
import { git, pinsInMergeOrder } from './git.js';

/** Longest name of one file or folder in a tree: what Linux file systems hold (NAME_MAX). */
const MAX_TREE_NAME_BYTES = 255;
/** Longest path in a tree (PATH_MAX). */
const MAX_TREE_PATH_BYTES = 4_096;
/** Modes git itself writes: a file, an executable, a link, a folder, a submodule. */
const TREE_MODES = new Set(['100644', '100755', '120000', '040000', '160000']);
/** Programs whose words that are not options may name a file they run. */
const INTERPRETERS = new Set([
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'source',
  '.',
  'node',
  'tsx',
  'ts-node',
  'python',
  'python3',
  'ruby',
  'perl',
  'php',
]);
/** Programs that run the command after their own options and settings. */
const WRAPPERS = new Set(['env', 'exec', 'command', 'nice', 'nohup', 'time', 'timeout', 'stdbuf', 'setsid']);
/** `NAME=value`: an environment setting before a command. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;
/**
 * Protected whatever the graph says: `.gitattributes` decides how a checkout writes every file
 * (line endings, filters), so a new one can change what an unchanged check sees.
 */
const ALWAYS_PROTECTED = ['**/.gitattributes'];
/** How many unsafe paths a reason lists before it says "and N more". */
const LISTED_PATHS_MAX = 5;

interface ArtifactCheckInput {
  repo: string;
  revision: string;
  /** The commit the work started from; it must be in the artifact. */
  baseCommit: string;
  /** Upstream key -> the verified revision the task was released against; each must be in the artifact. */
  pins: Record<string, string>;
  /** The task's `verify.protect`. */
  protect: readonly string[];
  /** The verify command, whose own files are protected too. */
  command?: string;
}

/** Why the artifact is refused, or undefined when the verification may run. */
export async function checkArtifact(input: ArtifactCheckInput): Promise<string | undefined> {
  const { repo, revision } = input;
  if (!(await isCommit(repo, revision))) return `revision ${revision} is not a commit in the graph's repository`;
  const unsafe = await unsafeTreePaths(repo, revision);
  if (unsafe.length > 0) return `its tree holds what no checkout may: ${listed(unsafe)}`;

  const missing: string[] = [];
  if (!(await contains(repo, revision, input.baseCommit))) missing.push(`its base ${input.baseCommit}`);
  const pins = pinsInMergeOrder(input.pins);
  for (const [key, pinned] of pins) {
    if (!(await contains(repo, revision, pinned))) missing.push(`upstream ${key} at ${pinned}, its pinned verified revision`);
  }
  if (missing.length > 0) return `revision ${revision} does not contain ${missing.join('; ')}`;

  const protectedTree = await startingTree(
    repo,
    input.baseCommit,
    pins.map(([, pinned]) => pinned),
  );
  if (protectedTree === undefined) {
    return `its base and pinned upstream revisions do not merge cleanly, so what it may change cannot be told apart`;
  }
  const tree = await git(repo, ['rev-parse', `${revision}^{tree}`]);
  if (tree === protectedTree) return `revision ${revision} adds nothing to its base and pinned upstream revisions`;

  // What the command runs, what is protected by name, and what either reaches through a link.
  const named = [...commandFiles(input.command), ...input.protect.filter((p) => !/[*?[]/.test(p))];
  const reached = (await Promise.all(named.map((file) => pathsReaching(repo, protectedTree, file)))).flat();
  const protectedPaths = [...new Set([...input.protect, ...reached])];
  const guarded = [...protectedPaths, ...ALWAYS_PROTECTED];
  const paths = await changedPaths(repo, protectedTree, tree, guarded);
  if (paths.length > 0) return `it changes what checks it: ${listed(paths)} (protected: ${guarded.join(', ')})`;
  return undefined;
}

/** The files that differ between two trees among `pathspecs` (globs relative to the repository's top). */
async function changedPaths(repo: string, from: string, to: string, pathspecs: readonly string[]): Promise<string[]> {
  const changed = await git(repo, [
    'diff',
    '--no-renames',
    '--name-only',
    '-z',
    from,
    to,
    '--',
    ...pathspecs.map((p) => `:(top,glob)${p}`),
  ]);
  return changed.split('\0').filter(Boolean);
}

/**
 * U11: what commit `revision` changes against the tree its run started from (its base with its
 * pins merged, as the command runner builds it): the trees are found once, then each call names
 * the changed files among its `pathspecs`. Undefined when that cannot be told (not a commit here,
 * or pins that do not merge), which the verification rejects anyway.
 */
export async function changedSinceStart(
  repo: string,
  input: { baseCommit: string; pins: Record<string, string>; revision: string },
): Promise<((pathspecs: readonly string[]) => Promise<string[]>) | undefined> {
  if (!(await isCommit(repo, input.revision))) return undefined;
  const start = await startingTree(
    repo,
    input.baseCommit,
    pinsInMergeOrder(input.pins).map(([, pinned]) => pinned),
  );
  if (start === undefined) return undefined;
  const tree = await git(repo, ['rev-parse', `${input.revision}^{tree}`]);
  return (pathspecs) => changedPaths(repo, start, tree, pathspecs);
}

async function isCommit(repo: string, revision: string): Promise<boolean> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(revision)) return false;
  return git(repo, ['cat-file', '-e', `${revision}^{commit}`]).then(
    () => true,
    () => false,
  );
}

/** Whether `ancestor` is in the history of `revision` (itself included); an unknown commit is not. */
async function contains(repo: string, revision: string, ancestor: string): Promise<boolean> {
  return git(repo, ['merge-base', '--is-ancestor', ancestor, revision]).then(
    () => true,
    () => false,
  );
}

/**
 * The tree the agent started from, as the command runner builds it: the base with each pinned
 * upstream revision merged in, in key order. Made without a checkout (`merge-tree`); undefined on
 * a conflict.
 */
async function startingTree(repo: string, baseCommit: string, pins: string[]): Promise<string | undefined> {
  let head = baseCommit;
  for (const pin of pins) {
    if (await contains(repo, head, pin)) continue;
    if (await contains(repo, pin, head)) {
      head = pin; // a fast-forward, as `git merge` makes it
      continue;
    }
    const merged = await mergeTree(repo, head, pin);
    if (merged === 'conflict') return undefined;
    const tree = merged;
    head = await git(repo, ['commit-tree', tree, '-p', head, '-p', pin, '-m', 'baton: starting tree of a verification']);
  }
  return git(repo, ['rev-parse', `${head}^{tree}`]);
}

/**
 * The verify command's own files, as far as a reader of the command line can tell (name the rest in
 * `verify.protect`): each word that names a file of the starting tree (pathsReaching) and that a simple command
 * starts by path (`./check.sh`) or gives to a shell or an interpreter (`bash -e verify.sh`, `node
 * test/run.js`; the script of `sh -c '...'` is read the same way), after wrappers (`env`,
 * `timeout 60`, `exec` ...) and relative to a `cd` before it. Files the command only reads (`grep -q
 * done result.txt`) are the work it checks; a file the agent adds is its work too (a task may be to
 * write the test the command runs).
 */
function commandFiles(command: string | undefined): string[] {
  const candidates = new Set<string>();
  const read = (line: string, depth: number) => {
    let cwd = '';
    for (const all of simpleCommands(line)) {
      const words = unwrapped(all);
      const [first, ...rest] = words;
      if (!first) continue;
      const at = (word: string) => path.posix.join(cwd, word);
      if (first === 'cd') {
        cwd = rest[0] && !rest[0].startsWith('/') && !rest[0].includes('$') ? at(rest[0]) : cwd;
        continue;
      }
      if (first.includes('/')) candidates.add(at(first));
      if (!INTERPRETERS.has(path.posix.basename(first))) continue;
      const script = rest.indexOf('-c');
      if (script >= 0 && rest[script + 1] && depth < 4) read(rest[script + 1]!, depth + 1);
      else for (const word of rest) if (!word.startsWith('-')) candidates.add(at(word));
    }
  };
  read(command ?? '', 0);
  return [...candidates]
    .map((c) => path.posix.normalize(c))
    .filter((file) => !file.startsWith('/') && !file.startsWith('..') && !/[*?[\]:\\$\s]/.test(file));
}

/** A simple command's words from its program on: leading `NAME=value`s and wrappers (`env -i X=1`, `timeout 60`, `exec`) left out. */
function unwrapped(words: string[]): string[] {
  let rest = words;
  for (;;) {
    rest = rest.slice(
      Math.max(
        0,
        rest.findIndex((w) => !ASSIGNMENT.test(w)),
      ),
    );
    if (rest.length === 0 || !WRAPPERS.has(path.posix.basename(rest[0]!))) return rest;
    // A wrapper's own options, settings and numbers (a timeout's duration, nice's level) come before the command.
    const next = rest.slice(1).findIndex((w) => !w.startsWith('-') && !ASSIGNMENT.test(w) && !/^\d/.test(w));
    rest = next < 0 ? [] : rest.slice(1 + next);
  }
}

/**
 * The paths of the starting tree that `file` is, or reaches through links (itself a link, or under
 * a folder that is one): protecting them all keeps a link from moving what it names out of sight.
 * Empty unless `file` is a file of the tree (a folder the command names is not protected by default).
 */
async function pathsReaching(repo: string, tree: string, file: string): Promise<string[]> {
  const reached: string[] = [];
  let remaining = file.split('/').filter((p) => p && p !== '.');
  let done: string[] = [];
  for (let hops = 0; remaining.length > 0 && hops < 40; hops++) {
    const here = [...done, remaining[0]!].join('/');
    const entry = await treeEntry(repo, tree, here);
    if (!entry) return [];
    if (entry.mode === '120000') {
      reached.push(here);
      const target = await git(repo, ['cat-file', 'blob', entry.oid]);
      const resolved = path.posix.normalize(path.posix.join(done.join('/'), target, ...remaining.slice(1)));
      if (target.startsWith('/') || resolved.startsWith('..')) return reached; // out of the tree: the link itself is what can be guarded
      done = [];
      remaining = resolved.split('/').filter((p) => p && p !== '.');
      continue;
    }
    done = [...done, remaining[0]!];
    remaining = remaining.slice(1);
    if (remaining.length === 0) return entry.type === 'blob' ? [...reached, here] : [];
  }
  return [];
}

/** The entry of `tree` at exactly `file`, or undefined. */
async function treeEntry(repo: string, tree: string, file: string): Promise<{ mode: string; type: string; oid: string } | undefined> {
  const line = await git(repo, ['ls-tree', '-z', '--full-tree', tree, '--', `:(top,literal)${file}`]).catch(() => '');
  const [meta, name] = line.replace(/\0$/, '').split('\t');
  if (!meta || name !== file) return undefined;
  const [mode, type, oid] = meta.split(' ');
  return { mode: mode!, type: type!, oid: oid! };
}

/** Merges `pin` into `head` without a checkout: the merged tree, or 'conflict'. Any other failure is thrown. */
function mergeTree(repo: string, head: string, pin: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['-C', repo, 'merge-tree', '--write-tree', '--no-messages', head, pin], (error, stdout, stderr) => {
      // Exit 1 is a conflict (the tree is printed all the same); anything else is git failing.
      if (error && error.code !== 1) reject(new Error(`git merge-tree ${head} ${pin} failed: ${String(stderr).trim() || error.message}`));
      else if (error) resolve('conflict');
      else resolve(String(stdout).trim().split('\n')[0]!);
    });
  });
}

/**
 * The words of each simple command of a shell command line, as far as a reader needs them here:
 * quotes and backslashes are honoured, and `;`, `&`, `|`, parentheses, backquotes and newlines
 * outside quotes end a command. Expansions are left as they are written.
 */
export function simpleCommands(command: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < command.length) word += command[++i]!;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < command.length) {
      word = (word ?? '') + command[++i]!;
    } else if (/\s/.test(c) && c !== '\n') {
      endWord();
    } else if (';&|()`\n'.includes(c)) {
      endWord();
      if (words.length) commands.push(words);
      words = [];
    } else {
      word = (word ?? '') + c;
    }
  }
  endWord();
  if (words.length) commands.push(words);
  return commands;
}

/**
 * Every entry of `revision`'s tree a checkout must not hold or cannot: `.git` anywhere (git's own
 * folder: hooks and config), `.` and `..`, names too long for a file system, and modes git never
 * writes. The checks of `git fsck`, which a bundle fetch skips, plus what only a checkout finds.
 */
async function unsafeTreePaths(repo: string, revision: string): Promise<string[]> {
  const { stdout } = await run('git', ['-C', repo, 'ls-tree', '-r', '-t', '-z', '--full-tree', revision]);
  const unsafe: string[] = [];
  for (const entry of stdout.split('\0')) {
    if (!entry) continue;
    const tab = entry.indexOf('\t');
    const mode = entry.slice(0, entry.indexOf(' '));
    const file = entry.slice(tab + 1);
    const names = file.split('/');
    const why = !TREE_MODES.has(mode)
      ? `mode ${mode}`
      : names.some((n) => n === '' || n === '.' || n === '..')
        ? 'a . or .. name'
        : names.some(isGitFolderName)
          ? 'a .git name'
          : names.some((n) => Buffer.byteLength(n) > MAX_TREE_NAME_BYTES)
            ? `a name over ${MAX_TREE_NAME_BYTES} bytes`
            : Buffer.byteLength(file) > MAX_TREE_PATH_BYTES
              ? `a path over ${MAX_TREE_PATH_BYTES} bytes`
              : undefined;
    if (why) unsafe.push(`${JSON.stringify(file.length > 120 ? `${file.slice(0, 117)}...` : file)} (${why})`);
  }
  return unsafe;
}

/** `.git` as any file system may read it: any case, trailing dots or spaces (Windows), the 8.3 short name. */
function isGitFolderName(name: string): boolean {
  const folded = name.toLowerCase().replace(/[. ]+$/, '');
  return folded === '.git' || folded === 'git~1';
}

function listed(paths: string[]): string {
  const more = paths.length - LISTED_PATHS_MAX;
  return `${paths.slice(0, LISTED_PATHS_MAX).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}
