import { describe, expect, it } from 'vitest';
import { run } from '../../src/dev/run.js';
import { cleanEnv, runCli } from '../helpers/cli.js';

/** What the script offers for `words` (the last being the one completed), run by `shell` as the shell would. */
async function offered(shell: 'bash' | 'zsh', script: string, words: string[]): Promise<string[]> {
  const program = [
    script,
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    '_baton_completion',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const { stdout } = await run(shell, ['-c', program]).catch((error: Error) => {
    throw new Error(`${shell} is needed for this test (Debian: apt-get install ${shell}): ${error.message}`);
  });
  return stdout.split('\n').filter(Boolean);
}

describe('baton completion', () => {
  it('completes commands, subcommands, options and their choices in bash, from the command tree itself', async () => {
    const result = await runCli(['completion', 'bash'], cleanEnv({}));
    expect(result.code, result.output).toBe(0);
    const script = result.stdout;
    expect(await offered('bash', script, ['baton', 'gr'])).toEqual(['graphs']);
    expect(await offered('bash', script, ['baton', 'token', ''])).toEqual(['create', 'list', 'revoke', '--help']);
    expect(await offered('bash', script, ['baton', 'graphs', '--status', 'r'])).toEqual(['running']);
    expect(await offered('bash', script, ['baton', 'drill', '--json', 'R'])).toEqual(['R1', 'R2']);
    // baton's own options before the command, and a command's arguments, do not lose the command.
    expect(await offered('bash', script, ['baton', '--verbose', 'status', 'g1', '--j'])).toEqual(['--json']);
    // An option that takes any value offers nothing (the shell falls back to file names).
    expect(await offered('bash', script, ['baton', 'worker', '--work-dir', ''])).toEqual([]);
  });

  it('writes a zsh script that runs through bashcompinit, and refuses another shell', async () => {
    const result = await runCli(['completion', 'zsh'], cleanEnv({}));
    expect(result.code, result.output).toBe(0);
    // zsh's compgen leaves matching the typed prefix to zsh itself: every choice is offered.
    expect(await offered('zsh', result.stdout, ['baton', 'graphs', '--status', 'r'])).toContain('running');
    expect(await offered('zsh', result.stdout, ['baton', 'object', ''])).toEqual(expect.arrayContaining(['take', 'offer', 'sweep']));
    const fish = await runCli(['completion', 'fish'], cleanEnv({}));
    expect(fish.code).not.toBe(0);
    expect(fish.output).toMatch(/Allowed choices are bash, zsh/);
  });
});
