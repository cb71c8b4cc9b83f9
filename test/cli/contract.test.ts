import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';

/**
 * The commands that need no `--json`, and why: they print no data on stdout (only messages, on
 * stderr), or what they print is already JSON or a protocol or script of its own. Any other command
 * that ends the tree must offer `--json`, so a new command cannot forget it.
 */
const NO_JSON: Record<string, string> = {
  dev: 'runs a stack; messages only',
  worker: 'runs a worker; messages only',
  serve: 'runs the agent API; messages only',
  mcp: 'stdout is the MCP protocol',
  demo: 'messages only',
  migrate: 'messages only',
  login: 'messages only',
  rerun: 'messages only',
  'token revoke': 'messages only',
  'pool limit': 'messages only',
  check: 'prints its health-check row as JSON',
  api: "prints the operation's result as JSON",
  'tool call': "prints the call's result as JSON",
  completion: 'prints a shell script',
};

describe('one CLI contract', () => {
  it('every command that prints data offers --json', async () => {
    // The completion script is written from the command tree: each command's words, its options among them.
    const script = await runCli(['completion', 'bash'], cleanEnv({}));
    expect(script.code, script.output).toBe(0);
    const commands = new Map(
      [...script.stdout.matchAll(/^\s+'([^'|]+)'\) words='([^']*)' ;;$/gm)].map(([, path, words]) => [path!.trim(), words!.split(' ')]),
    );
    const leaves = [...commands].filter(([path]) => ![...commands.keys()].some((other) => other.startsWith(`${path} `)));
    expect(leaves.length).toBeGreaterThan(30);
    const missing = leaves.filter(([path, words]) => !words.includes('--json') && !(path in NO_JSON)).map(([path]) => path);
    expect(missing).toEqual([]);
    // The exemptions name real commands, and ones that still lack --json.
    for (const path of Object.keys(NO_JSON)) expect(commands.get(path), path).not.toContain('--json');
  });
});
