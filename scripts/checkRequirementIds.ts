// Requirement-id guard: every requirement id cited in the code, the tests or the docs (`T4`,
// `(SPEC X1, X2)`, ranges such as `O1-O6` or `D1–D5`) must be defined in docs/requirements.md, and
// that page must define each id once. An id is defined by a Markdown heading that starts with it
// (`### T3 Atomic claim`); its letter must be one of the families the page defines.
// Usage: `tsx scripts/checkRequirementIds.ts [root]` (default: this repository). Exits 1 on problems.
//
// What counts as a citation: an uppercase family letter and a number from 1 to 99, standing alone as
// a word. So `BT003`, `S3Client`, `S3_BUCKET`, `0xD1`, an ISO time such as `01T12:00`, `T0` and
// lowercase `t1` are not citations. Data files (.json, .svg, ...) are not read.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REQUIREMENTS_DOC = 'docs/requirements.md';

/** Where citations are looked for, relative to the root: folders (recursively) and single files. */
const SCANNED_PATHS = ['src', 'activities', 'workflows', 'bench', 'test', 'scripts', 'docs', 'README.md'];

const TEXT_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.sql', '.md', '.yml', '.yaml', '.sh', '.txt']);
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', '.baton']);

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

interface RequirementIdProblem {
  /** Relative to the root, with `/` separators. */
  file: string;
  line: number;
  id: string;
  message: string;
}

interface RequirementDefinition {
  id: string;
  line: number;
}

interface RequirementCitation {
  id: string;
  line: number;
}

const DEFINITION = /^#{1,6}\s+(?:<a\s[^>]*>\s*<\/a>\s*)?([A-Z])([1-9]\d?)\b/;

/** The ids a requirements page defines, one per heading that starts with an id, in order. */
function definedRequirementIds(markdown: string): RequirementDefinition[] {
  const definitions: RequirementDefinition[] = [];
  markdown.split(/\r?\n/).forEach((text, index) => {
    const match = DEFINITION.exec(text);
    if (match) definitions.push({ id: `${match[1]}${match[2]}`, line: index + 1 });
  });
  return definitions;
}

/**
 * The requirement ids `text` cites, per line, for ids whose letter is in `families` (e.g. "TXOESUD").
 * A range `A1-A4` (hyphen, en or em dash) cites every id in it; a backwards range cites its ends only
 * and is reported through `malformed`.
 */
export function citedRequirementIds(
  text: string,
  families: string,
  malformed: (line: number, range: string) => void = () => {},
): RequirementCitation[] {
  if (!/^[A-Z]+$/.test(families)) return [];
  const single = new RegExp(`\\b([${families}])([1-9]\\d?)\\b`, 'g');
  const range = new RegExp(`\\b([${families}])([1-9]\\d?)\\s?[-\\u2013\\u2014]\\s?([${families}])([1-9]\\d?)\\b`, 'g');
  const citations: RequirementCitation[] = [];
  text.split(/\r?\n/).forEach((content, index) => {
    const line = index + 1;
    const ids = new Set<string>();
    for (const m of content.matchAll(single)) ids.add(`${m[1]}${m[2]}`);
    for (const m of content.matchAll(range)) {
      const [whole, from, start, to, end] = m as unknown as [string, string, string, string, string];
      if (from !== to) continue; // `T1-D5` is two citations, not a range
      const first = Number(start);
      const last = Number(end);
      if (last < first) {
        malformed(line, whole);
        continue;
      }
      for (let n = first; n <= last; n++) ids.add(`${from}${n}`);
    }
    for (const id of ids) citations.push({ id, line });
  });
  return citations;
}

function scannedFiles(root: string, paths: readonly string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(full);
      } else if (entry.isFile() && TEXT_EXTENSIONS.has(path.extname(entry.name))) {
        files.push(full);
      }
    }
  };
  for (const relative of paths) {
    const full = path.join(root, relative);
    if (!existsSync(full)) continue;
    if (statSync(full).isDirectory()) walk(full);
    else files.push(full);
  }
  return [...new Set(files)].sort();
}

/**
 * Every problem with requirement ids under `root`: an id docs/requirements.md defines twice, and a
 * citation of an id it does not define (file and line). An empty list means the check passes.
 */
export function checkRequirementIds(root: string = ROOT, options: { paths?: readonly string[] } = {}): RequirementIdProblem[] {
  const docPath = path.join(root, REQUIREMENTS_DOC);
  if (!existsSync(docPath)) {
    return [{ file: REQUIREMENTS_DOC, line: 0, id: '', message: `${REQUIREMENTS_DOC} is missing: it defines the requirement ids` }];
  }
  const problems: RequirementIdProblem[] = [];
  const firstDefinition = new Map<string, number>();
  for (const { id, line } of definedRequirementIds(readFileSync(docPath, 'utf8'))) {
    const first = firstDefinition.get(id);
    if (first === undefined) firstDefinition.set(id, line);
    else problems.push({ file: REQUIREMENTS_DOC, line, id, message: `defines ${id} again (first defined at line ${first})` });
  }
  const families = [...new Set([...firstDefinition.keys()].map((id) => id[0]!))].sort().join('');
  if (!families) {
    return [
      { file: REQUIREMENTS_DOC, line: 0, id: '', message: 'defines no requirement ids (expected headings such as "### T1 Task record")' },
    ];
  }
  for (const file of scannedFiles(root, options.paths ?? SCANNED_PATHS)) {
    const relative = path.relative(root, file).split(path.sep).join('/');
    const text = readFileSync(file, 'utf8');
    const malformed = (line: number, range: string) =>
      problems.push({ file: relative, line, id: range, message: `cites the range ${range}, which runs backwards` });
    for (const { id, line } of citedRequirementIds(text, families, malformed)) {
      if (!firstDefinition.has(id)) {
        problems.push({ file: relative, line, id, message: `cites ${id}, which ${REQUIREMENTS_DOC} does not define` });
      }
    }
  }
  return problems;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? ROOT);
  const problems = checkRequirementIds(root);
  for (const p of problems) process.stderr.write(`${p.file}:${p.line}: ${p.message}\n`);
  process.stderr.write(`requirement id check: ${problems.length ? `${problems.length} problem(s)` : 'ok'} in ${root}\n`);
  process.exitCode = problems.length ? 1 : 0;
}
