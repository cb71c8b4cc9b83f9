// Dead-export guard: every export of src/, activities/, workflows/ and scripts/ must be imported by
// some other file of the project (tests, bench, scripts and the page in ui/ count: an export only tests use is used).
// An export nothing imports is dead code or belongs to its own file alone, and hides which parts of
// a module the rest of baton relies on. Entry points, whose exports are used from outside, are exempt.
// Usage: `tsx scripts/checkUnusedExports.ts [root]` (default: the repository; reads root/tsconfig.json).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const CHECKED_DIRS = ['src', 'activities', 'workflows', 'scripts'];
/** Files whose exports are used from outside the project's own imports, and why. */
const ENTRY_POINTS: Record<string, string> = {
  'src/index.ts': "the package's public API (package.json `exports`); what it re-exports counts as imported",
  'workflows/index.ts': "the worker's `workflowsPath`: Temporal starts each exported function by name as a workflow type",
  'workflows/withHostWorkflows.ts': "the `workflowsPath` the baton plugin gives a host's worker: baton's workflows beside the host's",
};

interface UnusedExport {
  /** The file, relative to the root, with `/` separators. */
  file: string;
  /** The exported name (`default` for a default export). */
  name: string;
}

/** The names of `specifier`'s exports one import statement uses; `*` for all of them. */
function importedNames(node: ts.Node, file: ts.SourceFile): string[] {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause;
    if (!clause) return [];
    const names = clause.name ? ['default'] : [];
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) names.push(...namespaceMembers(bindings.name.text, file));
    if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.map((e) => (e.propertyName ?? e.name).text));
    return names;
  }
  if (ts.isExportDeclaration(node)) {
    const clause = node.exportClause;
    return clause && ts.isNamedExports(clause) ? clause.elements.map((e) => (e.propertyName ?? e.name).text) : ['*'];
  }
  if (ts.isImportTypeNode(node)) return [node.qualifier ? firstName(node.qualifier) : '*'];
  return ['*']; // import('...') and anything else: all of them
}

function firstName(name: ts.EntityName): string {
  return ts.isIdentifier(name) ? name.text : firstName(name.left);
}

/** The members read through `import * as ns`: `ns.x` and `ns.X` in types; `*` if `ns` itself escapes. */
function namespaceMembers(ns: string, file: ts.SourceFile): string[] {
  const members = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === ns && !ts.isNamespaceImport(node.parent)) {
      const { parent } = node;
      if (ts.isPropertyAccessExpression(parent) && parent.expression === node) members.add(parent.name.text);
      else if (ts.isQualifiedName(parent) && parent.left === node) members.add(parent.right.text);
      else members.add('*');
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return [...members];
}

/** The module specifier of an import, re-export, `import()` or `import('...')` type, if it names one. */
function specifierOf(node: ts.Node): string | undefined {
  const literal =
    ts.isImportDeclaration(node) || ts.isExportDeclaration(node)
      ? node.moduleSpecifier
      : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
        ? node.arguments[0]
        : ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)
          ? node.argument.literal
          : undefined;
  return literal && ts.isStringLiteral(literal) ? literal.text : undefined;
}

/** Every export of the checked folders that no other file of the project imports. */
export function checkUnusedExports(root: string = ROOT): UnusedExport[] {
  const parse = (file: string) =>
    ts.sys.fileExists(file)
      ? ts.getParsedCommandLineOfConfigFile(file, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })
      : undefined;
  const config = parse(path.join(root, 'tsconfig.json'));
  if (!config) throw new Error(`cannot read ${path.join(root, 'tsconfig.json')}`);
  // The operator's page (ui/, its own settings for the browser) imports baton's types too.
  const page = parse(path.join(root, 'ui', 'tsconfig.json'));
  const program = ts.createProgram([...config.fileNames, ...(page?.fileNames ?? [])], config.options);
  const checker = program.getTypeChecker();
  const relative = (fileName: string) => path.relative(root, fileName).split(path.sep).join('/');
  const ownFiles = program.getSourceFiles().filter((f) => !f.isDeclarationFile && !relative(f.fileName).startsWith('..'));

  // file -> the names other files import from it
  const used = new Map<string, Set<string>>();
  for (const file of ownFiles) {
    const visit = (node: ts.Node): void => {
      const specifier = specifierOf(node);
      const target = specifier && ts.resolveModuleName(specifier, file.fileName, config.options, ts.sys).resolvedModule?.resolvedFileName;
      if (target && target !== file.fileName) {
        const names = used.get(relative(target)) ?? new Set();
        for (const name of importedNames(node, file)) names.add(name);
        used.set(relative(target), names);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }

  const unused: UnusedExport[] = [];
  for (const file of ownFiles) {
    const name = relative(file.fileName);
    if (!CHECKED_DIRS.includes(name.split('/')[0]!) || name in ENTRY_POINTS || used.get(name)?.has('*')) continue;
    const module = checker.getSymbolAtLocation(file);
    for (const symbol of module ? checker.getExportsOfModule(module) : []) {
      if (!used.get(name)?.has(symbol.name)) unused.push({ file: name, name: symbol.name });
    }
  }
  return unused.sort((a, b) => a.file.localeCompare(b.file) || a.name.localeCompare(b.name));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const unused = checkUnusedExports(process.argv[2] ? path.resolve(process.argv[2]) : ROOT);
  for (const u of unused) process.stderr.write(`unused export ${u.file}: ${u.name}\n`);
  process.stderr.write(`unused export check: ${unused.length ? `${unused.length} export(s) nothing imports` : 'ok'}\n`);
  process.exitCode = unused.length ? 1 : 0;
}
