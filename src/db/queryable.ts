/**
 * The one thing baton's SQL needs from a connection. A `pg.Pool`, a `pg.Client` and a test
 * transaction all fit, so store functions take this instead of `pg` types.
 *
 * Any `pg.Pool` or `pg.Client` will do, including a host's own with pg's default type parsers: the
 * store's answers are read the same either way (an int8 column that arrives as a string, pg's
 * default, becomes a number by the column type pg reports in `fields`). A pool from `createPool`,
 * or one given `types: BATON_PG_TYPES`, parses int8 as a number itself; another `Queryable` that
 * returns no `fields` should do the same.
 */
export interface Queryable {
  query<R extends Record<string, unknown> = Record<string, any>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null; fields?: readonly { name: string; dataTypeID: number }[] }>;
}
