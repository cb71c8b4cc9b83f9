// Layering guard: no two folders of baton import each other, directly or round a longer loop, and
// no two files do either. A folder is `src/<name>`, `activities` or `workflows`; a file directly
// under `src/` (errors.ts, config.ts, ...) is its own node (`src/errors`). Type-only imports count:
// they still tie the folders (and the files) together.
// Usage: `tsx scripts/checkImportCycles.ts [root]` (default: the repository).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SOURCE_DIRS = ['src', 'activities', 'workflows'];
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

interface ImportCycle {
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

/** A file's node: its path from `root` without the extension (`../errors.js` names src/errors.ts). */
function fileOf(root: string, file: string): string {
  return path
    .relative(root, file)
    .split(path.sep)
    .join('/')
    .replace(/\.[jt]s$/, '');
}

/** node -> imported node -> one import behind that edge, as `file: 'specifier'`. */
type ImportEdges = Map<string, Map<string, string>>;

function importEdges(root: string, node: (root: string, file: string) => string): ImportEdges {
  const edges: ImportEdges = new Map();
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
        const [from, to] = [node(root, file), node(root, path.resolve(path.dirname(file), specifier!))];
        if (from === to) continue;
        if (!edges.has(from)) edges.set(from, new Map());
        if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${path.relative(root, file)}: '${specifier}'`);
      }
    }
  }
  return edges;
}

/**
 * One loop through each group of files that import each other (a strongly connected component of
 * more than one file), starting at its smallest file: a file loop is reported once however many
 * loops its files make, so the search stays linear in the imports.
 */
export function checkFileImportCycles(root: string = ROOT): ImportCycle[] {
  const edges = importEdges(root, fileOf);
  const next = (n: string) => [...(edges.get(n)?.keys() ?? [])].sort();
  // Tarjan's algorithm, iterative over the sorted nodes so the result does not depend on file order.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (start: string) => {
    const frames: Array<{ node: string; children: string[] }> = [];
    const open = (node: string) => {
      index.set(node, index.size);
      low.set(node, index.get(node)!);
      stack.push(node);
      onStack.add(node);
      frames.push({ node, children: next(node) });
    };
    open(start);
    while (frames.length) {
      const frame = frames.at(-1)!;
      const child = frame.children.shift();
      if (child !== undefined) {
        if (!index.has(child)) open(child);
        else if (onStack.has(child)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        continue;
      }
      frames.pop();
      const parent = frames.at(-1);
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const group: string[] = [];
        for (let n = stack.pop()!; ; n = stack.pop()!) {
          onStack.delete(n);
          group.push(n);
          if (n === frame.node) break;
        }
        if (group.length > 1) groups.push(group.sort());
      }
    }
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  // In each group, the shortest way from its smallest file back to itself (breadth first).
  return groups
    .sort((a, b) => a[0]!.localeCompare(b[0]!))
    .map((group) => {
      const inGroup = new Set(group);
      const start = group[0]!;
      const cameFrom = new Map<string, string>();
      const queue = [start];
      while (queue.length && !cameFrom.has(start)) {
        const node = queue.shift()!;
        for (const to of next(node)) {
          if (!inGroup.has(to) || cameFrom.has(to)) continue;
          cameFrom.set(to, node);
          queue.push(to);
        }
      }
      const nodes = [start];
      for (let n = cameFrom.get(start)!; n !== start; n = cameFrom.get(n)!) nodes.splice(1, 0, n);
      return { nodes, evidence: nodes.map((n, i) => edges.get(n)!.get(nodes[(i + 1) % nodes.length]!)!) };
    });
}

/** Every loop between folders under `root`, each reported once. */
export function checkImportCycles(root: string = ROOT): ImportCycle[] {
  const edges = importEdges(root, nodeOf);
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
  const root = process.argv[2] ? path.resolve(process.argv[2]) : ROOT;
  const cycles = [...checkImportCycles(root), ...checkFileImportCycles(root)];
  for (const c of cycles)
    process.stderr.write(`import cycle ${[...c.nodes, c.nodes[0]].join(' -> ')}\n${c.evidence.map((e) => `  ${e}\n`).join('')}`);
  process.stderr.write(`import cycle check (folders and files): ${cycles.length ? `${cycles.length} cycle(s)` : 'ok'}\n`);
  process.exitCode = cycles.length ? 1 : 0;
}
