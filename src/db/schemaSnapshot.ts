// The whole schema of a database as one deterministic text: what `npm run db:snapshot` writes to
// src/db/schema.sql and what a test compares with a freshly migrated database, so every schema
// change shows up in review as a diff of one file.
//
// Why not `pg_dump --schema-only`: pg_dump refuses a server newer than itself, and baton runs on
// the embedded Postgres 18 as readily as on a distribution's 15. The catalog's own deparsers
// (pg_get_functiondef, pg_get_constraintdef, pg_get_indexdef, pg_get_triggerdef) print the same
// text on every supported version, so one snapshot holds wherever the tests run.
import type { Queryable } from './queryable.js';

const SCHEMA = 'baton';

/** Where the checked-in snapshot lives, relative to the repository root. */
export const SCHEMA_SNAPSHOT_PATH = 'src/db/schema.sql';

const HEADER =
  '-- The whole baton schema of a freshly migrated database, written by `npm run db:snapshot`.\n' +
  '-- Do not edit: change a migration or a file in src/db/functions and run the script again.\n';

/** Returns the schema of `db` as text: types, tables, indexes, functions, triggers, views, grants. */
export async function dumpSchema(db: Queryable): Promise<string> {
  const sections = [
    await section(db, 'types', TYPES),
    await section(db, 'tables', TABLES),
    await section(db, 'indexes', INDEXES),
    await section(db, 'functions', FUNCTIONS),
    await section(db, 'triggers', TRIGGERS),
    await section(db, 'views', VIEWS),
    await section(db, 'privileges', PRIVILEGES),
  ];
  return `${HEADER}${sections.join('')}`;
}

async function section(db: Queryable, title: string, sql: string): Promise<string> {
  const { rows } = await db.query<{ ddl: string }>(sql, [SCHEMA]);
  return `\n-- ${title}\n\n${rows.map((r) => `${r.ddl.trimEnd()}\n`).join('\n')}`;
}

const TYPES = `
SELECT format('CREATE TYPE %s AS (%s);', t.oid::regtype,
         string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)) AS ddl
  FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid JOIN pg_attribute a ON a.attrelid = c.oid
 WHERE t.typnamespace = $1::regnamespace AND t.typtype = 'c' AND c.relkind = 'c' AND a.attnum > 0 AND NOT a.attisdropped
 GROUP BY t.oid ORDER BY t.oid::regtype::text`;

// Columns in their order, then the constraints by name. Postgres 18 also records NOT NULL as a
// constraint (contype 'n'); the column line says it already, on every version.
const TABLES = `
SELECT format(E'CREATE TABLE %s (\\n%s\\n);', c.oid::regclass, string_agg(line, E',\\n' ORDER BY ord, line)) AS ddl
  FROM pg_class c
  JOIN LATERAL (
    SELECT a.attnum AS ord, format('  %I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
             CASE WHEN a.attgenerated = 's' THEN format(' GENERATED ALWAYS AS (%s) STORED', pg_get_expr(d.adbin, d.adrelid))
                  WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END,
             CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END) AS line
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 10000, format('  CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid))
      FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype <> 'n'
  ) lines ON true
 WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p')
 GROUP BY c.oid ORDER BY c.oid::regclass::text`;

const INDEXES = `
SELECT pg_get_indexdef(i.indexrelid) || ';' AS ddl
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relnamespace = $1::regnamespace AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
 ORDER BY c.relname`;

const FUNCTIONS = `
SELECT pg_get_functiondef(p.oid) || ';' AS ddl
  FROM pg_proc p WHERE p.pronamespace = $1::regnamespace AND p.prokind IN ('f', 'p')
 ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`;

const TRIGGERS = `
SELECT pg_get_triggerdef(t.oid) || ';' AS ddl
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal
 ORDER BY c.relname, t.tgname`;

const VIEWS = `
SELECT format(E'CREATE VIEW %s AS\\n%s', c.oid::regclass, pg_get_viewdef(c.oid)) AS ddl
  FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'v'
 ORDER BY c.relname`;

// Grants that differ from the defaults; the owner is baton_owner wherever baton migrated.
const PRIVILEGES = `
SELECT format('%s %s: %s', kind, name, acl::text) AS ddl FROM (
  SELECT 'table' AS kind, c.oid::regclass::text AS name, c.relacl AS acl
    FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relacl IS NOT NULL
  UNION ALL
  SELECT 'function', p.oid::regprocedure::text, p.proacl
    FROM pg_proc p WHERE p.pronamespace = $1::regnamespace AND p.proacl IS NOT NULL
  UNION ALL
  SELECT 'schema', n.nspname, n.nspacl
    FROM pg_namespace n WHERE n.oid = $1::regnamespace AND n.nspacl IS NOT NULL
) granted ORDER BY kind, name`;
