import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { afterAll } from 'vitest';
import { reachableDataFolder } from '../../src/dev/embeddedPostgres.js';

/**
 * Returns a maker of fresh folders (`<tmp>/<prefix>-...`) that the `postgres` OS user can reach,
 * as an embedded Postgres run as root needs; all are removed after the file's tests.
 */
export function usePostgresHomes(prefix: string): () => Promise<string> {
  const homes: string[] = [];
  afterAll(async () => {
    for (const home of homes) await rm(home, { recursive: true, force: true });
  });
  return async () => {
    const home = await reachableDataFolder(tmpdir(), `${prefix}-`);
    homes.push(home);
    return home;
  };
}
