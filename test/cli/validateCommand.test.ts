import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { registerValidateCommand } from '../../src/cli/validateCommand.js';
import { InvalidInputError } from '../../src/errors.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-validate-'));
});

async function graphFile(name: string, lines: string[]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

const VALID = ['id: sdk', 'repo: ../sdk', 'tasks:', '  - key: a', '    run: make', '    verify: make test'];
const INVALID = [
  'id: sdk',
  'repo: ../sdk',
  'policy:',
  '  heartbeatTimeoutMs: 10',
  'tasks:',
  '  - key: a',
  '    dependsOn: [ghost]',
  '    run: make',
  '    verfy: make test',
];

/** Runs `baton validate <args>` in this process: what it printed on stdout, the lines it logged (stderr in the CLI), its exit code. */
async function validate(...args: string[]): Promise<{ stdout: string; logged: string[]; code: number }> {
  const logged: string[] = [];
  const program = new Command().exitOverride();
  registerValidateCommand(program, (line) => logged.push(line));
  let stdout = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['validate', ...args], { from: 'user' });
    return { stdout, logged, code: Number(process.exitCode ?? 0) };
  } finally {
    write.mockRestore();
    process.exitCode = undefined;
  }
}

describe('baton validate', () => {
  it('says a valid graph is valid, with its id and size, and exits 0', async () => {
    const file = await graphFile('valid.yaml', [
      ...VALID,
      '  - key: b',
      '    dependsOn: [a]',
      '    run: make b',
      '    verify: make test-b',
    ]);
    expect(await validate(file)).toEqual({ stdout: `${file}: valid graph sdk with 2 task(s)\n`, logged: [], code: 0 });
    const unnamed = await graphFile('unnamed.yaml', VALID.slice(1));
    expect((await validate(unnamed)).stdout).toBe(`${unnamed}: valid graph (its id is generated when it is submitted) with 1 task(s)\n`);
  });

  it('prints each problem as file:line:col: message, in the order of the file, and exits 2', async () => {
    const file = await graphFile('invalid.yaml', INVALID);
    expect(await validate(file)).toEqual({
      stdout: '',
      logged: [
        `${file}:4:3: policy.heartbeatTimeoutMs must be an integer from 1000 to 3600000`,
        // The verify the task lacks is placed at the task.
        `${file}:6:5: task 'a': verify must name exactly one of command or function, or an approval, or one of each (an artifact is released only after verification)`,
        `${file}:7:17: task 'a': unknown dependency 'ghost'`,
        `${file}:9:5: task 'a': unknown key 'verfy' (did you mean 'verify'?)`,
      ],
      code: 2,
    });
    const broken = await graphFile('broken.yaml', ['id: sdk', 'tasks: [', '  {key: a}']);
    expect(await validate(broken)).toEqual({
      stdout: '',
      logged: [`${broken}:4:1: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`],
      code: 2,
    });
  });

  it('with --json prints one object on stdout: valid with id and tasks, or the problems with line, column and path', async () => {
    const valid = await validate(
      await graphFile('valid.json', [
        JSON.stringify({ id: 'j', tasks: [{ key: 'a', run: { function: 'f' }, verify: 'true' }], repo: '.' }),
      ]),
      '--json',
    );
    expect(valid).toEqual({ stdout: '{"valid":true,"id":"j","tasks":1}\n', logged: [], code: 0 });
    expect(JSON.parse((await validate(await graphFile('unnamed.yaml', VALID.slice(1)), '--json')).stdout)).toEqual({
      valid: true,
      id: null,
      tasks: 1,
    });

    const invalid = await validate(await graphFile('invalid.yaml', INVALID), '--json');
    expect(invalid.logged).toEqual([]);
    expect(invalid.code).toBe(2);
    expect(invalid.stdout.endsWith('}\n')).toBe(true);
    expect(JSON.parse(invalid.stdout)).toEqual({
      valid: false,
      problems: [
        {
          line: 4,
          column: 3,
          path: ['policy', 'heartbeatTimeoutMs'],
          message: 'policy.heartbeatTimeoutMs must be an integer from 1000 to 3600000',
        },
        {
          line: 6,
          column: 5,
          path: ['tasks', 0, 'verify'],
          message:
            "task 'a': verify must name exactly one of command or function, or an approval, or one of each (an artifact is released only after verification)",
        },
        { line: 7, column: 17, path: ['tasks', 0, 'dependsOn', 0], message: "task 'a': unknown dependency 'ghost'" },
        { line: 9, column: 5, path: ['tasks', 0, 'verfy'], message: "task 'a': unknown key 'verfy' (did you mean 'verify'?)" },
      ],
    });
  });

  it('refuses a file it cannot read as invalid input, leaving the exit code to the CLI', async () => {
    await expect(validate(path.join(dir, 'missing.yaml'))).rejects.toThrow(InvalidInputError);
    expect(process.exitCode).toBeUndefined();
  });

  it('imports only light modules at the top, so registering it costs the other commands nothing at start-up', async () => {
    const source = await readFile(new URL('../../src/cli/validateCommand.ts', import.meta.url), 'utf8');
    expect([...source.matchAll(/^import (type )?.* from '([^']+)';$/gm)].map((m) => `${m[1] ?? ''}${m[2]}`)).toEqual([
      'type commander',
      'type ../log.js',
      './options.js',
    ]);
  });
});
