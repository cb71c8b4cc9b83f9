// Layering guard: no two folders of baton import each other, directly or round a longer loop.
// A folder is `src/<name>`, `activities` or `workflows`; a file directly under `src/` (errors.ts,
// config.ts, ...) is its own node (`src/errors`). Type-only imports count: they still tie the folders together.
// Usage: `tsx scripts/checkImportCycles.ts [root]` (default: the repository).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SOURCE_DIRS = ['src', 'activities', 'workflows'];
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

export interface ImportCycle {
  /** The folders of the loop, in order; the first imports the second, ..., the last the first. */
  nodes: string[];
  /** One import behind each step of the loop, as `file: 'specifier'`. */
  evidence: string[];
}

function nodeOf(root: string, file: string): string {
  const parts = path.relative(root, file).split(path.sep);
  if (parts[0] !== 'src') return parts[0]!;
  // `../errors.js` names src/errors.ts: a file's node is its path without the extension.
  return parts.length > 2 ? `src/${parts[1]}` : `src/${parts[1]!.replace(/\.[jt]s$/, '')}`;
}

/** Every loop between folders under `root`, each reported once. */
export function checkImportCycles(root: string = ROOT): ImportCycle[] {
  const edges = new Map<string, Map<string, string>>();
  for (const dir of SOURCE_DIRS) {
    let files: string[];
    try {
      files = readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    } catch {
      continue;
    }
    for (const relative of files) {
      const file = path.join(root, dir, relative);
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
        const [from, to] = [nodeOf(root, file), nodeOf(root, path.resolve(path.dirname(file), specifier!))];
        if (from === to) continue;
        if (!edges.has(from)) edges.set(from, new Map());
        if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${path.relative(root, file)}: '${specifier}'`);
      }
    }
  }
  // A loop is a path back to its start; start each search at the loop's smallest node, so it is found once.
  const cycles: ImportCycle[] = [];
  const search = (start: string, pathSoFar: string[]) => {
    for (const next of edges.get(pathSoFar.at(-1)!)?.keys() ?? []) {
      if (next === start) {
        const nodes = [...pathSoFar];
        cycles.push({ nodes, evidence: nodes.map((n, i) => edges.get(n)!.get(nodes[(i + 1) % nodes.length]!)!) });
      } else if (next > start && !pathSoFar.includes(next)) {
        search(start, [...pathSoFar, next]);
      }
    }
  };
  for (const start of [...edges.keys()].sort()) search(start, [start]);
  return cycles;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cycles = checkImportCycles(process.argv[2] ? path.resolve(process.argv[2]) : ROOT);
  for (const c of cycles) process.stderr.write(`import cycle ${[...c.nodes, c.nodes[0]].join(' -> ')}\n${c.evidence.map((e) => `  ${e}\n`).join('')}`);
  process.stderr.write(`import cycle check: ${cycles.length ? `${cycles.length} cycle(s)` : 'ok'}\n`);
  process.exitCode = cycles.length ? 1 : 0;
}
