// Least-privilege roles (SPEC S1). The schema and everything in it belong to baton_owner, a role
// nobody logs in as; running components log in as members of one group role, which may EXECUTE
// the store functions granted to it (next to each function in src/db/functions) and hold no
// privilege on any table. Every granted function is SECURITY DEFINER with a pinned search_path,
// so it runs as the owner and enforces the rules itself. docs/security.md has the table.
import pg from 'pg';
import { BatonError, InsufficientPrivilegeError } from '../errors.js';
import type { Queryable } from './queryable.js';

/** Owns the schema, its tables and its functions; never a login. */
export const OWNER_ROLE = 'baton_owner';

/** The group roles a login is made a member of, and what each is for. */
export const GROUP_ROLES = {
  /** Workers: claim, heartbeat, submit, fail, verify, release, the tool ledger, object calls of activities. */
  baton_worker: 'workers (claims, owner writes, verification, tool ledger, objects)',
  /** Operators and their tools: submit graphs, rerun and cancel, shared objects, read. */
  baton_client: 'clients (submit graphs, rerun, cancel, objects, read)',
  /** Dashboards and `baton status` / `baton events`: read only. */
  baton_reader: 'readers (status, events, tool calls; read only)',
  /** The agents' API service (its grants come with that API). */
  baton_agent: 'the agent API service',
} as const;

export type GroupRole = keyof typeof GROUP_ROLES;

/** Every role baton's schema needs, owner first. */
export const BATON_ROLES: readonly string[] = [OWNER_ROLE, ...Object.keys(GROUP_ROLES)];

// Roles are shared by every database of the server, and migrators of two databases may create
// them at once: a duplicate or a concurrent update of the same role is someone else's success.
const ROLE_RACE_SQLSTATES = new Set(['42710', '23505', 'XX000']);

/**
 * Thrown when the roles baton needs are missing or the migrating login cannot act for the owner,
 * and this login may not fix that itself. `statements` are what an administrator runs once.
 */
export class RolesMissingError extends BatonError {
  override readonly name = 'RolesMissingError';
  readonly code = 'roles_missing';
  constructor(
    readonly missing: string[],
    readonly statements: string[],
  ) {
    super(
      `baton's database roles are not set up (${missing.join('; ')}), and this login may not set them up. ` +
        `Ask an administrator to run, once:\n${statements.map((s) => `  ${s}`).join('\n')}\n` +
        '(`baton migrate --print-roles` prints these statements.)',
    );
  }
}

/** The statements that set up baton's roles for `migrator` on `database`; each is safe to repeat. */
export function roleStatements(migrator: string, database: string): string[] {
  return [
    ...BATON_ROLES.map((role) => `DO $$ BEGIN CREATE ROLE ${role} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;`),
    `GRANT ${OWNER_ROLE} TO ${pg.escapeIdentifier(migrator)};`,
    `GRANT CREATE ON DATABASE ${pg.escapeIdentifier(database)} TO ${OWNER_ROLE};`,
  ];
}

type RolePosture = {
  login: string;
  database: string;
  existing: string[];
  canCreateRoles: boolean;
  actsAsOwner: boolean;
  ownerMayCreate: boolean;
  ownsDatabase: boolean;
};

async function posture(db: Queryable): Promise<RolePosture> {
  const { rows } = await db.query<RolePosture>(
    `SELECT current_user AS login, current_database() AS database,
            ARRAY(SELECT rolname::text FROM pg_roles WHERE rolname = ANY($1::text[])) AS existing,
            (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) AS "canCreateRoles",
            EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2) AND pg_has_role(current_user, $2, 'USAGE') AS "actsAsOwner",
            EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2) AND has_database_privilege($2, current_database(), 'CREATE') AS "ownerMayCreate",
            (SELECT pg_has_role(current_user, datdba, 'USAGE') FROM pg_database WHERE datname = current_database()) AS "ownsDatabase"`,
    [BATON_ROLES, OWNER_ROLE],
  );
  return rows[0]!;
}

/**
 * Makes sure the roles exist, the migrating login may act as the owner, and the owner may create
 * the schema, doing what this login is allowed to; throws RolesMissingError with the statements
 * an administrator must run for the rest. Changes nothing when all is in place.
 */
export async function ensureRoles(db: Queryable): Promise<void> {
  let state = await posture(db);
  const missingRoles = BATON_ROLES.filter((r) => !state.existing.includes(r));
  if (missingRoles.length && state.canCreateRoles) {
    for (const role of missingRoles) await raceSafe(db, `CREATE ROLE ${role} NOLOGIN`);
  }
  state = await posture(db);
  if (!state.actsAsOwner && state.canCreateRoles && state.existing.includes(OWNER_ROLE)) {
    await raceSafe(db, `GRANT ${OWNER_ROLE} TO ${pg.escapeIdentifier(state.login)}`);
  }
  if (!state.ownerMayCreate && state.ownsDatabase && state.existing.includes(OWNER_ROLE)) {
    await db.query(`GRANT CREATE ON DATABASE ${pg.escapeIdentifier(state.database)} TO ${OWNER_ROLE}`);
  }
  state = await posture(db);
  const problems = [
    ...BATON_ROLES.filter((r) => !state.existing.includes(r)).map((r) => `role ${r} does not exist`),
    ...(state.actsAsOwner ? [] : [`${state.login} is not a member of ${OWNER_ROLE}`]),
    ...(state.ownerMayCreate ? [] : [`${OWNER_ROLE} may not create in database ${state.database}`]),
  ];
  if (problems.length) throw new RolesMissingError(problems, roleStatements(state.login, state.database));
}

/**
 * Refuses a login that cannot do `group`'s work, before a component starts on it: every store call
 * it made would be refused with `insufficient_privilege`. A member of `group`, of the owner role
 * (the login that migrated) or a superuser may.
 */
export async function requireGroupMember(db: Queryable, group: GroupRole): Promise<void> {
  const { rows } = await db.query<{ login: string; may: boolean }>(
    `SELECT current_user AS login,
            (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
              OR coalesce((SELECT bool_or(pg_has_role(current_user, oid, 'USAGE')) FROM pg_roles WHERE rolname IN ($1, $2)), false) AS may`,
    [group, OWNER_ROLE],
  );
  const { login, may } = rows[0]!;
  if (!may) {
    throw new InsufficientPrivilegeError(
      `${login} is not a member of ${group}, the role of ${GROUP_ROLES[group]}, so every store call would be refused; ` +
        `an administrator makes a login for this with \`baton login <name> --role ${group.replace(/^baton_/, '')}\``,
    );
  }
}

async function raceSafe(db: Queryable, statement: string): Promise<void> {
  await db.query(statement).catch((error: { code?: string }) => {
    if (!ROLE_RACE_SQLSTATES.has(error.code ?? '')) throw error;
  });
}

/**
 * Hands every object of the baton schema that the owner does not own yet (the schema itself, and
 * tables, sequences and types made by migrations) to the owner, and lets the group roles resolve
 * names in the schema. Functions are created by the owner itself (see `applyDefinitions`).
 */
export async function adoptSchema(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ statement: string }>(
    `SELECT format('ALTER SCHEMA baton OWNER TO %I', $1::text) AS statement
       FROM pg_namespace WHERE nspname = 'baton' AND nspowner <> $1::regrole
     UNION ALL
     SELECT format('ALTER TABLE %s OWNER TO %I', c.oid::regclass, $1::text)
       FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'p', 'v') AND c.relowner <> $1::regrole
     UNION ALL
     SELECT format('ALTER SEQUENCE %s OWNER TO %I', c.oid::regclass, $1::text)
       FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'S' AND c.relowner <> $1::regrole
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))
     UNION ALL
     SELECT format('ALTER TYPE %s OWNER TO %I', t.oid::regtype, $1::text)
       FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid
      WHERE t.typnamespace = 'baton'::regnamespace AND c.relkind = 'c' AND t.typowner <> $1::regrole
     UNION ALL
     SELECT format('ALTER FUNCTION %s OWNER TO %I', p.oid::regprocedure, $1::text)
       FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace AND p.proowner <> $1::regrole`,
    [OWNER_ROLE],
  );
  for (const { statement } of rows) await db.query(statement);
  await db.query(`GRANT USAGE ON SCHEMA baton TO ${Object.keys(GROUP_ROLES).join(', ')}`);
}
