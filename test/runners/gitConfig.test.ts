// Runs of one repository start together (a graph's independent pooled tasks each set the
// repository's receive.fsckObjects as they are offered), and git refuses a config write while
// another holds the config's lock: a run once failed on that, used its only attempt, and left its
// dependents blocked forever.
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureGitConfig, git } from '../../src/runners/git.js';
import { createScriptedRepo } from '../../src/testkit/scriptedRepo.js';

const repos: string[] = [];
afterAll(async () => {
  for (const repo of repos) await rm(repo, { recursive: true, force: true });
});

describe('ensureGitConfig', () => {
  it('sets a setting from many runs at once, every one of them succeeding', async () => {
    const repo = await createScriptedRepo();
    repos.push(repo);
    for (const key of ['receive.fsckObjects', 'baton.first', 'baton.second']) {
      const results = await Promise.allSettled(Array.from({ length: 16 }, () => ensureGitConfig(repo, key, 'true')));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await git(repo, ['config', '--get', key])).toBe('true');
    }
  });

  it('leaves a setting already in place alone, even while another writer holds the lock', async () => {
    const repo = await createScriptedRepo();
    repos.push(repo);
    await git(repo, ['config', 'receive.fsckObjects', 'true']);
    const lock = path.join(repo, '.git', 'config.lock');
    await writeFile(lock, '');
    try {
      await expect(ensureGitConfig(repo, 'receive.fsckObjects', 'true')).resolves.toBeUndefined();
      // A setting that must change cannot while the lock is held: git's own refusal, after the retries.
      await expect(ensureGitConfig(repo, 'receive.fsckObjects', 'false')).rejects.toThrow(/lock/);
    } finally {
      await rm(lock, { force: true });
    }
  });
});
