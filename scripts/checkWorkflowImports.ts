// Determinism guard: workflow code runs in Temporal's sandbox and is replayed, so it must not reach
// Node built-ins, `pg`, baton's database code or activity implementations. Type-only imports are
// erased at compile time and allowed. Relative value imports are followed, so a helper cannot
// smuggle a forbidden import in. Usage: `tsx scripts/checkWorkflowImports.ts [dir]` (default: workflows).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

interface ImportViolation {
  file: string;
  specifier: string;
  reason: string;
}

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const FORBIDDEN_DIRS = [path.join(ROOT, 'src', 'db'), path.join(ROOT, 'activities')];

function forbiddenReason(specifier: string, resolved: string | undefined): string | undefined {
  if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!)) return 'Node built-in';
  if (specifier === 'pg' || specifier.startsWith('pg/') || specifier.startsWith('pg-')) return 'Postgres driver';
  if (resolved && FORBIDDEN_DIRS.some((dir) => resolved.startsWith(dir + path.sep) || resolved === dir)) {
    return `non-deterministic code under ${path.relative(
      ROOT,
      FORBIDDEN_DIRS.find((d) => resolved.startsWith(d))!,
    )}`;
  }
  return undefined;
}

/** Maps a relative specifier (`./x.js`) to the `.ts` file the bundler would load. */
function resolveRelative(fromFile: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? base;
}

/** Value (non-type) module specifiers a file imports, re-exports, `import()`s or `require()`s. */
function valueImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allTypes =
        clause?.isTypeOnly ||
        (clause &&
          !clause.name &&
          named &&
          ts.isNamedImports(named) &&
          named.elements.length > 0 &&
          named.elements.every((e) => e.isTypeOnly));
      if (!allTypes) specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      specifiers.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

/** Every forbidden import reachable from the `.ts` files under `dir`. */
export function checkWorkflowImports(dir: string): ImportViolation[] {
  const violations: ImportViolation[] = [];
  const seen = new Set<string>();
  const queue = tsFiles(path.resolve(dir));
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of valueImports(file)) {
      const resolved = resolveRelative(file, specifier);
      const reason = forbiddenReason(specifier, resolved);
      if (reason) violations.push({ file: path.relative(ROOT, file), specifier, reason });
      else if (resolved && existsSync(resolved)) queue.push(resolved);
    }
  }
  return violations;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? path.join(ROOT, 'workflows');
  const violations = checkWorkflowImports(dir);
  for (const v of violations) process.stderr.write(`${v.file}: imports '${v.specifier}' (${v.reason}); not allowed in workflow code\n`);
  process.stderr.write(`workflow import check: ${violations.length ? `${violations.length} violation(s)` : 'ok'} in ${dir}\n`);
  process.exitCode = violations.length ? 1 : 0;
}
