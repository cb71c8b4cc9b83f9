/** A JSON value, as parameters and results travel. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
