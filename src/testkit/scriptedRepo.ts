// Throwaway git repositories and shell-script agents that edit and commit, so runs need no model.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { git } from '../runners/git.js';

/** A throwaway git repository with one commit of `files` (paths may name folders), for scripted agents that edit files and commit. */
export async function createScriptedRepo(files: Record<string, string> = { 'README.md': '# scratch repository\n' }): Promise<string> {
  const repo = await mkdtemp(path.join(tmpdir(), 'baton-repo-'));
  await git(repo, ['init', '-q', '-b', 'main']);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(repo, name)), { recursive: true });
    await writeFile(path.join(repo, name), content);
  }
  await git(repo, ['add', '.']);
  await git(repo, ['commit', '-q', '-m', 'initial']);
  return repo;
}

/**
 * A scripted agent that works a while: prints `step 1` to `step <steps>` 50 ms apart (each line is
 * progress its run reports), writes `file`, then commits everything.
 */
export function steppingAgent(steps: number, file: string): string {
  return `for i in $(seq 1 ${steps}); do echo "step $i"; sleep 0.05; done; echo ${file} > ${file}; ${commitAll(file)}`;
}

/** A shell snippet that commits everything in the worktree as a scripted agent would. */
export function commitAll(message: string): string {
  return `git add -A && git -c user.name=agent -c user.email=agent@localhost commit -q -m ${JSON.stringify(message)}`;
}
