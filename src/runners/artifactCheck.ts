// T12: what the verifier checks of an artifact before it runs anything of it. The agent may not
// have edited what checks it, dropped the work it was built on, handed in nothing, or brought in a
// tree that no checkout can hold safely; each is a rejection with its reason, never a retry.
import path from 'node:path';
import { run } from '../dev/run.js';
import { git } from './git.js';

/** Longest name of one file or folder in a tree: what Linux file systems hold (NAME_MAX). */
export const MAX_TREE_NAME_BYTES = 255;
/** Longest path in a tree (PATH_MAX). */
export const MAX_TREE_PATH_BYTES = 4_096;
/** Modes git itself writes: a file, an executable, a link, a folder, a submodule. */
const TREE_MODES = new Set(['100644', '100755', '120000', '040000', '160000']);
/** Programs whose first argument that is not an option is a file they run. */
const INTERPRETERS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'source', '.', 'node', 'tsx', 'ts-node', 'python', 'python3', 'ruby', 'perl', 'php']);
/** How many unsafe paths a reason lists before it says "and N more". */
const LISTED_PATHS_MAX = 5;

export interface ArtifactCheckInput {
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
  const pins = Object.entries(input.pins).sort(([a], [b]) => a.localeCompare(b));
  for (const [key, pinned] of pins) {
    if (!(await contains(repo, revision, pinned))) missing.push(`upstream ${key} at ${pinned}, its pinned verified revision`);
  }
  if (missing.length > 0) return `revision ${revision} does not contain ${missing.join('; ')}`;

  const protectedTree = await startingTree(repo, input.baseCommit, pins.map(([, pinned]) => pinned));
  if (protectedTree === undefined) {
    return `its base and pinned upstream revisions do not merge cleanly, so what it may change cannot be told apart`;
  }
  const tree = await git(repo, ['rev-parse', `${revision}^{tree}`]);
  if (tree === protectedTree) return `revision ${revision} adds nothing to its base and pinned upstream revisions`;

  const guarded = [...new Set([...input.protect, ...(await commandFiles(repo, protectedTree, input.command))])];
  if (guarded.length === 0) return undefined;
  const changed = await git(repo, ['diff', '--no-renames', '--name-only', '-z', protectedTree, tree, '--', ...guarded.map((p) => `:(top,glob)${p}`)]);
  const paths = changed.split('\0').filter(Boolean);
  if (paths.length > 0) return `it changes what checks it: ${listed(paths)} (protected: ${guarded.join(', ')})`;
  return undefined;
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
    const merged = await run('git', ['-C', repo, 'merge-tree', '--write-tree', '--no-messages', head, pin]).catch(() => undefined);
    const tree = merged?.stdout.trim().split('\n')[0];
    if (!tree) return undefined;
    head = await git(repo, ['commit-tree', tree, '-p', head, '-p', pin, '-m', 'baton: starting tree of a verification']);
  }
  return git(repo, ['rev-parse', `${head}^{tree}`]);
}

/**
 * The verify command's own files: what each of its simple commands runs, when the starting tree
 * holds it. A file is run when it is started by path (`./check.sh`, `scripts/verify`) or given to a
 * shell or an interpreter (`sh ./verify.sh`, `node test/run.js`). Files the command only reads
 * (`grep -q done result.txt`) are the work it checks; a file the agent adds is its work too (a
 * task may be to write the test the command runs); folders are not protected by default.
 */
async function commandFiles(repo: string, tree: string, command: string | undefined): Promise<string[]> {
  const candidates = new Set<string>();
  for (const words of simpleCommands(command ?? '')) {
    // Leading `NAME=value` words set the environment; the command is the word after them.
    const start = words.findIndex((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
    const [first, ...rest] = start < 0 ? [] : words.slice(start);
    if (!first) continue;
    if (first.includes('/')) candidates.add(first);
    if (INTERPRETERS.has(path.posix.basename(first))) {
      const script = rest.find((w) => !w.startsWith('-'));
      if (script) candidates.add(script);
    }
  }
  const files: string[] = [];
  for (const candidate of candidates) {
    const file = path.posix.normalize(candidate);
    if (file.startsWith('/') || file.startsWith('..') || /[*?[\]:\\$\s]/.test(file)) continue;
    if ((await git(repo, ['cat-file', '-t', `${tree}:${file}`]).catch(() => undefined)) === 'blob') files.push(file);
  }
  return files;
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
