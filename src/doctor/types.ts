/** One thing `baton doctor` found wrong with a deployment's security posture (SPEC S5). */
export interface Finding {
  /** Stable name of the check that found it, e.g. `table_privilege`. */
  check: string;
  /** What is wrong, naming the login, relation, function or rule. */
  message: string;
  /** What to do about it. */
  fix?: string;
}
