// `baton doctor`'s look at the database (SPEC S5): who is connected with more power than a
// component needs, who may touch tables or call functions beyond what baton grants, and how the
// server authenticates. Each check reads the catalog only and changes nothing.
import type { Queryable } from '../db/queryable.js';
import { GROUP_ROLES, OWNER_ROLE } from '../db/roles.js';
import type { Finding } from './types.js';

const GROUPS = Object.keys(GROUP_ROLES);

/** Every finding about the database `db` is connected to, as seen by its login. */
export async function checkDatabase(db: Queryable, options: { administrator?: Queryable } = {}): Promise<Finding[]> {
  return [
    ...(await privilegedLogins(db)),
    ...(await tablePrivileges(db)),
    ...(await functionPrivileges(db)),
    ...(await authentication(options.administrator ?? db)),
  ];
}

/**
 * This login, and every other session in this database, as superuser or schema owner. A login
 * without pg_read_all_stats sees other sessions' logins but not their application names.
 */
async function privilegedLogins(db: Queryable): Promise<Finding[]> {
  const { rows } = await db.query<{ login: string; application: string; superuser: boolean; owner: boolean; self: boolean }>(
    `SELECT DISTINCT a.usename::text AS login, a.application_name AS application, r.rolsuper AS superuser,
            pg_has_role(r.oid, $1, 'MEMBER') AS owner, a.pid = pg_backend_pid() AS self
       FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
      WHERE a.datname = current_database() AND (r.rolsuper OR pg_has_role(r.oid, $1, 'MEMBER'))
      ORDER BY 1, 2`,
    [OWNER_ROLE],
  );
  return rows.map((r) => ({
    check: 'privileged_login',
    message:
      `${r.self ? 'this command connects' : `a session${r.application ? ` '${r.application}'` : ''} is connected`} as ${r.login}, ` +
      `${r.superuser ? 'a superuser' : `a member of ${OWNER_ROLE}`}: anything it runs can change tables and functions directly`,
    fix: `connect components as logins that are members of one of ${GROUPS.join(', ')} only; keep ${r.login} for \`baton migrate\``,
  }));
}

/** Table, view and sequence privileges held by anyone but the owner. */
async function tablePrivileges(db: Queryable): Promise<Finding[]> {
  const { rows } = await db.query<{ relation: string; grantee: string; privilege: string }>(
    `SELECT c.oid::regclass::text AS relation, coalesce(g.rolname, 'PUBLIC') AS grantee, acl.privilege_type AS privilege
       FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) acl LEFT JOIN pg_roles g ON g.oid = acl.grantee
      WHERE c.relnamespace = 'baton'::regnamespace AND acl.grantee <> c.relowner
      ORDER BY 1, 2, 3`,
  );
  return rows.map((r) => ({
    check: 'table_privilege',
    message: `${r.grantee} holds ${r.privilege} on ${r.relation}: writes and reads must go through baton's functions`,
    fix: `REVOKE ALL ON ${r.relation} FROM ${r.grantee === 'PUBLIC' ? 'PUBLIC' : `"${r.grantee}"`}`,
  }));
}

/** Functions anyone may call, and functions granted to a group that do not run as the owner with a pinned search_path. */
async function functionPrivileges(db: Queryable): Promise<Finding[]> {
  const { rows } = await db.query<{ fn: string; public: boolean; granted: boolean; definer: boolean; pinned: boolean }>(
    `SELECT p.oid::regprocedure::text AS fn,
            has_function_privilege('public', p.oid, 'EXECUTE') AS public,
            EXISTS (SELECT 1 FROM aclexplode(p.proacl) acl WHERE acl.grantee <> p.proowner) AS granted,
            p.prosecdef AS definer,
            EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\\_path=%') AS pinned
       FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace ORDER BY 1`,
  );
  const findings: Finding[] = [];
  for (const r of rows) {
    if (r.public) {
      findings.push({ check: 'public_execute', message: `anyone may call ${r.fn}`, fix: `REVOKE EXECUTE ON FUNCTION ${r.fn} FROM PUBLIC` });
    }
    if ((r.granted || r.public) && (!r.definer || !r.pinned)) {
      findings.push({
        check: 'unpinned_function',
        message: `${r.fn} may be called by others but ${r.definer ? 'has no pinned search_path' : 'is not SECURITY DEFINER'}`,
        fix: 'define it in src/db/functions with SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp',
      });
    }
  }
  return findings;
}

/** How the server lets clients in: trust or plain-password rules, and passwords not stored as SCRAM. */
async function authentication(db: Queryable): Promise<Finding[]> {
  const findings: Finding[] = [];
  const { rows: encryption } = await db.query<{ setting: string }>("SELECT current_setting('password_encryption') AS setting");
  if (encryption[0]?.setting !== 'scram-sha-256') {
    findings.push({
      check: 'weak_authentication',
      message: `password_encryption is ${encryption[0]?.setting}: new passwords are not stored as SCRAM`,
      fix: "ALTER SYSTEM SET password_encryption = 'scram-sha-256'; then reset the passwords",
    });
  }
  const rules = await db
    .query<{ line: number; type: string; method: string; address: string | null }>(
      `SELECT line_number AS line, type, auth_method AS method, address FROM pg_hba_file_rules
        WHERE auth_method IN ('trust', 'password', 'md5') AND type <> 'local' ORDER BY line_number`,
    )
    .catch(() => undefined);
  if (!rules) {
    findings.push({
      check: 'authentication_unknown',
      message: 'this login may not read pg_hba_file_rules, so how the server authenticates was not checked',
      fix: 'run `baton doctor` once with an administrator login (or grant it pg_read_all_settings)',
    });
    return findings;
  }
  for (const r of rules.rows) {
    findings.push({
      check: 'weak_authentication',
      message: `pg_hba.conf line ${r.line} lets ${r.type} connections${r.address ? ` from ${r.address}` : ''} in with '${r.method}'`,
      fix: 'use scram-sha-256 for every host rule',
    });
  }
  return findings;
}
