import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

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
    const home = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
    await chmod(home, 0o755);
    homes.push(home);
    return home;
  };
}
