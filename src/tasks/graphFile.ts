// A graph file: YAML, or JSON (which YAML reads too). Validating one is offline: it reads the file
// and nothing else (no database, no Temporal, no look at the repository it names), and gives every
// problem the line and column of the value it concerns.
import { readFile } from 'node:fs/promises';
import { isAlias, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { InvalidGraphError, InvalidInputError, type GraphProblem } from '../errors.js';
import { parseGraphSpec, type GraphSpec } from './graphSpec.js';

/** A problem of a graph file, with the line and column (from 1) of what it concerns. */
interface GraphFileProblem extends GraphProblem {
  line: number;
  column: number;
}

/** What validating a graph file found: the graph, or every problem in the order of the file. */
export type GraphFileValidation =
  | {
      valid: true;
      graph: GraphSpec;
      /** The file names no id: the one in `graph` is a stand-in, and submitting generates another. */
      idGenerated: boolean;
    }
  | { valid: false; problems: GraphFileProblem[] };

/** A parsed file: its value, and where the value at a path of it is written. */
interface LoadedFile {
  value: unknown;
  placeOf(path: GraphProblem['path']): { line: number; column: number };
}

/** Reads and parses `file`; its YAML errors, each at its place, if it is not YAML. */
async function loadFile(file: string): Promise<LoadedFile | { problems: GraphFileProblem[] }> {
  const text = await readFile(file, 'utf8').catch((error: Error) => {
    throw new InvalidInputError(`cannot read ${file}: ${error.message}`);
  });
  const lines = new LineCounter();
  // Without pretty errors a message is one line; the place is given as line and column instead.
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const at = (offset: number) => {
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  const notYaml = (offset: number, message: string): GraphFileProblem => ({
    ...at(offset),
    path: [],
    message: `not valid YAML: ${message}`,
  });
  if (document.errors.length) return { problems: document.errors.map((error) => notYaml(error.pos[0], error.message)) };
  try {
    return { value: document.toJS(), placeOf: (path) => at(offsetOf(document, path)) };
  } catch (error) {
    // An alias that names no anchor, or so many aliases that the value would explode.
    return { problems: [notYaml(0, (error as Error).message)] };
  }
}

/**
 * Where the value at `path` is written: a mapping's entry at its key, a list's item at the item.
 * A path the file does not hold all of (a required key left out) ends at the deepest part it holds.
 */
function offsetOf(document: Document.Parsed, path: GraphProblem['path']): number {
  let node: unknown = document.contents;
  let offset = document.contents?.range[0] ?? 0;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(document);
    const pair = isMap(node) ? node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment)) : undefined;
    const at = pair ? pair.key : isSeq(node) && typeof segment === 'number' ? node.items[segment] : undefined;
    if (!isNode(at) || !at.range) break;
    offset = at.range[0];
    node = pair ? pair.value : at;
  }
  return offset;
}

/** Reads a graph from YAML or JSON, as `parseGraphSpec` takes it; a file that is not YAML names the line and column of its error. */
export async function readGraphFile(file: string): Promise<unknown> {
  const loaded = await loadFile(file);
  if ('value' in loaded) return loaded.value;
  const [first] = loaded.problems;
  throw new InvalidInputError(`${file}:${first!.line}:${first!.column}: ${first!.message}`);
}

/**
 * Validates a graph file offline, as `baton submit` would before writing anything (without looking
 * at its repo), and gives every problem its line and column. Throws InvalidInputError when the file
 * cannot be read.
 */
export async function validateGraphFile(file: string): Promise<GraphFileValidation> {
  const loaded = await loadFile(file);
  if (!('value' in loaded)) return { valid: false, problems: loaded.problems };
  try {
    const graph = parseGraphSpec(loaded.value);
    const id = (loaded.value as { id?: unknown }).id;
    return { valid: true, graph, idGenerated: id === undefined || id === null };
  } catch (error) {
    if (!(error instanceof InvalidGraphError)) throw error;
    const problems = error.graphProblems.map((p) => ({ ...loaded.placeOf(p.path), path: p.path, message: p.message }));
    return { valid: false, problems: problems.sort((a, b) => a.line - b.line || a.column - b.column) };
  }
}
