// Logins of baton's components (SPEC S1): each is a LOGIN role that is a member of one group role
// (src/db/roles.ts) and holds nothing of its own, so a leaked worker password can do what a worker
// does and no more.
import pg from 'pg';
import { scramSha256Verifier } from './scramVerifier.js';
import type { Queryable } from './queryable.js';
import { InvalidInputError } from '../errors.js';
import { BATON_ROLES, type GroupRole } from './roles.js';

// Two databases' migrators may create the same login at once: someone else's success.
const DUPLICATE_ROLE = new Set(['42710', '23505']);

/**
 * Makes `login` a LOGIN role in `group` whose password is `password` (sent as a SCRAM verifier, so
 * the password never reaches the server's statement text). Needs a login that may create roles.
 */
export async function ensureComponentLogin(admin: Queryable, login: string, group: GroupRole, password: string): Promise<void> {
  if (BATON_ROLES.includes(login)) throw new InvalidInputError(`${login} is one of baton's own roles, not a login`);
  // Re-keying is for a component login only: never the administrator's or any role with more power.
  const { rows } = await admin.query<{ self: boolean; powerful: boolean; groups: string[] }>(
    `SELECT r.rolname = current_user AS self,
            r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls AS powerful,
            ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) AS groups
       FROM pg_roles r WHERE r.rolname = $1`,
    [login],
  );
  const existing = rows[0];
  if (existing && (existing.self || existing.powerful || existing.groups.some((g) => g !== group))) {
    throw new InvalidInputError(
      `${login} exists and is not a ${group} login (${existing.self ? 'it is this login' : existing.powerful ? 'it has administrative attributes' : `it is a member of ${existing.groups.join(', ')}`}); choose another name`,
    );
  }
  const role = pg.escapeIdentifier(login);
  await admin.query(`CREATE ROLE ${role} LOGIN`).catch((error: { code?: string }) => {
    if (!DUPLICATE_ROLE.has(error.code ?? '')) throw error;
  });
  await admin.query(`ALTER ROLE ${role} LOGIN NOCREATEDB NOCREATEROLE`);
  await setRolePassword(admin, login, password);
  await admin.query(`GRANT ${group} TO ${role}`);
}

/** Sets `role`'s password, sending its SCRAM verifier so the password itself never reaches the server's statement text. */
export async function setRolePassword(admin: Queryable, role: string, password: string): Promise<void> {
  await admin.query(`ALTER ROLE ${pg.escapeIdentifier(role)} PASSWORD ${pg.escapeLiteral(scramSha256Verifier(password))}`);
}

/** `url` with its login and password replaced. */
export function asLogin(url: string, login: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(login);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** `url` with its password left out, for printing and for state files. */
export function withoutPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.toString();
}
