/**
 * The one thing baton's SQL needs from a connection. A `pg.Pool`, a `pg.Client` and a test
 * transaction all fit, so store functions take this instead of `pg` types.
 */
export interface Queryable {
  query<R extends Record<string, unknown> = Record<string, any>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}
