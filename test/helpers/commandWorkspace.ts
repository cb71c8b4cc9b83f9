import { randomUUID } from 'node:crypto';
import { chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { createScriptedRepo } from '../../src/testkit/scriptedRepo.js';

/**
 * What a test file of command agents needs besides its stack: a scripted repository that per-run
 * agent users can clone (0755), and a work folder for the file's worker; both made before its tests
 * and removed after them. `name` goes into the folder's name; `files` are the repository's first
 * commit (Default: a README).
 */
export function useCommandWorkspace(name: string, files?: Record<string, string>): { readonly repo: string; readonly workDir: string } {
  const workDir = path.join(tmpdir(), `baton-${name}-test-${randomUUID().slice(0, 8)}`);
  let repo: string | undefined;
  beforeAll(async () => {
    repo = await createScriptedRepo(files);
    await chmod(repo, 0o755);
  });
  afterAll(async () => {
    if (repo) await rm(repo, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  });
  return {
    get repo() {
      return repo ?? expect.unreachable('the repository exists only while the tests run');
    },
    workDir,
  };
}
