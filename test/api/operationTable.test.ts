// One operation table: the agent API's operations and the scope each needs are listed in
// TypeScript (src/api/operations.ts) and in SQL (`baton.agent_operation_scope`, which agent_call
// asks before anything else). The two must name the same operations with the same scopes. The
// names alone are listed once more, apart from their schemas (src/api/operationNames.ts), for the CLI.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPERATION_NAMES } from '../../src/api/operationNames.js';
import { OPERATIONS } from '../../src/api/operations.js';
import { PACKAGE_ROOT } from '../../src/packageRoot.js';
import { useTestDatabase } from '../helpers/db.js';

const db = useTestDatabase();
const SCOPES = new Set<string>(Object.values(OPERATIONS).map((o) => o.scope));

async function sqlScopes(operations: readonly string[]): Promise<Record<string, string | null>> {
  const { rows } = await db.pool.query<{ operation: string; scope: string | null }>(
    'SELECT o AS operation, baton.agent_operation_scope(o) AS scope FROM unnest($1::text[]) AS o',
    [operations],
  );
  return Object.fromEntries(rows.map((r) => [r.operation, r.scope]));
}

/** Every string literal in the current definition of `baton.agent_operation_scope`. */
async function literalsOfScopeFunction(): Promise<string[]> {
  const { rows } = await db.pool.query<{ def: string }>(
    "SELECT pg_get_functiondef('baton.agent_operation_scope(text)'::regprocedure) AS def",
  );
  const body = rows[0]!.def.split('$function$')[1] ?? rows[0]!.def;
  return [...body.matchAll(/'((?:[^']|'')*)'/g)].map((m) => m[1]!.replaceAll("''", "'"));
}

describe('the operation table, in TypeScript and in the database', () => {
  it('lists the names the CLI knows in the order of the table', () => {
    expect(Object.keys(OPERATIONS)).toEqual([...OPERATION_NAMES]);
  });

  it('gives every TypeScript operation the same scope in SQL', async () => {
    const inSql = await sqlScopes(OPERATION_NAMES);
    expect(inSql).toEqual(Object.fromEntries(OPERATION_NAMES.map((name) => [name, OPERATIONS[name].scope])));
  });

  it('knows no operation in SQL that TypeScript lacks', async () => {
    // A name nobody defined has no scope, so agent_call refuses it as an unknown operation.
    expect(await sqlScopes(['object.delete', 'whoami ', 'WHOAMI', ''])).toEqual({
      'object.delete': null,
      'whoami ': null,
      WHOAMI: null,
      '': null,
    });
    // The function can only recognise a name it spells out, so its literals are the whole of what
    // it knows: each is an operation TypeScript has (it has a scope) or one of the scopes it
    // answers. A literal that is neither (a LIKE pattern, a new operation) fails here.
    const literals = [...new Set(await literalsOfScopeFunction())];
    const scopeOf = await sqlScopes(literals);
    const operations = literals.filter((l) => scopeOf[l] !== null);
    const others = literals.filter((l) => scopeOf[l] === null);
    expect(operations.sort()).toEqual([...OPERATION_NAMES].sort());
    expect(others.filter((l) => !SCOPES.has(l))).toEqual([]);
  });

  it('is the one docs/agents.md lists: each operation with its scope and effect', async () => {
    const doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'agents.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z.]+)` \| (read|notes|objects|submit|view|approve|admin|run) \| ([a-z, ]+) \|/gm)].map((m) => [
      m[1],
      m[2],
      m[3],
    ]);
    expect(rows).toEqual(
      OPERATION_NAMES.map((name) => {
        const { scope, effect } = OPERATIONS[name];
        const stated =
          effect.kind === 'read'
            ? 'read'
            : [effect.kind, effect.idempotent && 'idempotent', effect.openWorld && 'open world'].filter(Boolean).join(', ');
        return [name, scope, stated];
      }),
    );
  });
});
