import { TASK_STATUSES, TASK_TRANSITIONS } from '../tasks/states.js';

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * Values that migrations take from TypeScript, so each is defined once: a migration writes
 * `{{name}}` and `loadMigrations` substitutes the SQL text below.
 */
export const MIGRATION_CONSTANTS: Readonly<Record<string, string>> = {
  task_status_rows: TASK_STATUSES.map((s) => `(${literal(s)})`).join(', '),
  task_transition_rows: TASK_TRANSITIONS.map(([from, to]) => `(${literal(from)}, ${literal(to)})`).join(', '),
};
