import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/errors.js';
import { readGraphFile, validateGraphFile, type GraphFileValidation } from '../../src/tasks/graphFile.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-graph-file-'));
});

/** Writes `lines` as the file `name` in this test's folder; returns its path. */
async function graphFile(name: string, lines: string[]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

/** The problems of an invalid file as `line:column: message`, in order. */
const problemsOf = (result: GraphFileValidation) => {
  if (result.valid) throw new Error(`expected problems, the graph is valid: ${JSON.stringify(result.graph)}`);
  return result.problems.map((p) => `${p.line}:${p.column}: ${p.message}`);
};

describe('validating a graph file offline, with the line and column of every problem', () => {
  it('places a YAML syntax error, and readGraphFile names the file, line and column', async () => {
    const duplicate = await graphFile('duplicate.yaml', ['id: g', 'tasks:', '  - key: a', '    run: make', '    run: again']);
    expect(problemsOf(await validateGraphFile(duplicate))).toEqual(['5:5: not valid YAML: Map keys must be unique']);
    await expect(readGraphFile(duplicate)).rejects.toThrow(`invalid input: ${duplicate}:5:5: not valid YAML: Map keys must be unique`);
    const dedented = await graphFile('dedented.yaml', ['id: g', 'tasks:', '  - key: a', '    run: make', '   verify: make test']);
    expect(problemsOf(await validateGraphFile(dedented))).toEqual(['5:1: not valid YAML: Sequence item without - indicator']);
  });

  it('places an unknown key deep in a task at that key', async () => {
    const file = await graphFile('deep.yaml', [
      'id: g',
      'repo: /srv/repo',
      'tasks:',
      '  - key: a',
      '    run: make',
      '    verify: make test',
      '  - key: b',
      '    run: make b',
      '    verify:',
      '      command: make test-b',
      '      protects: [test/**]',
    ]);
    const result = await validateGraphFile(file);
    expect(result).toEqual({
      valid: false,
      problems: [
        {
          line: 11,
          column: 7,
          path: ['tasks', 1, 'verify', 'protects'],
          message: "task 'b': unknown key 'verify.protects' (did you mean 'verify.protect'?)",
        },
      ],
    });
  });

  it('places an unknown dependency at its name and a cycle at the dependency that starts it, in the order of the file', async () => {
    const file = await graphFile('deps.yaml', [
      'id: g',
      'policy:',
      '  maxAttempts: 0',
      'tasks:',
      '  - key: a',
      '    dependsOn: [c, ghost]',
      '    run: { function: f }',
      '    verify: { function: v }',
      '  - key: b',
      '    dependsOn:',
      '      - a',
      '    run: { function: f }',
      '    verify: { function: v }',
      '  - key: c',
      '    dependsOn: [b]',
      '    run: { function: f }',
      '    verify: { function: v }',
    ]);
    expect(problemsOf(await validateGraphFile(file))).toEqual([
      '3:3: policy.maxAttempts must be an integer from 1 to 100',
      '6:17: dependency cycle: a -> c -> b -> a',
      "6:20: task 'a': unknown dependency 'ghost'",
    ]);
  });

  it('places a problem about a missing value at what holds it, and one about the whole graph at its start', async () => {
    const keyless = await graphFile('keyless.yaml', [
      '# a graph',
      'id: g',
      'tasks:',
      '  - run: make',
      '    verify: make test',
      '  - key: b',
      '    run: make',
      '    verify: make test',
    ]);
    expect(problemsOf(await validateGraphFile(keyless))).toEqual([
      '2:1: repo is required when a task runs a command (the command runner works in a git worktree of it)',
      '4:5: tasks[0].key is required',
    ]);
    const empty = await graphFile('empty.yaml', ['# nothing yet']);
    expect(problemsOf(await validateGraphFile(empty))).toEqual(['1:1: a graph must be a mapping with a `tasks` list']);
  });

  it('returns a valid graph, and says when its id is left to be generated', async () => {
    const lines = ['repo: ../repo', 'tasks:', '  - key: a', '    run: make', '    verify: make test'];
    const named = await validateGraphFile(await graphFile('named.yaml', ['id: sdk', ...lines]));
    expect(named).toMatchObject({ valid: true, idGenerated: false, graph: { id: 'sdk', repo: '../repo', base: 'HEAD' } });
    expect(await validateGraphFile(await graphFile('unnamed.yaml', lines))).toMatchObject({ valid: true, idGenerated: true });
    expect(await readGraphFile(path.join(dir, 'named.yaml'))).toEqual({
      id: 'sdk',
      repo: '../repo',
      tasks: [{ key: 'a', run: 'make', verify: 'make test' }],
    });
  });

  it('reads JSON too, with the same places', async () => {
    const file = await graphFile('graph.json', [
      '{',
      '  "id": "g",',
      '  "tasks": [',
      '    { "key": "a", "run": { "function": "f" }, "verify": { "function": "v" } },',
      '    { "key": "b", "dependsOn": ["a", "z"], "run": { "function": "f" }, "verify": { "function": "v" }, "payload": 1, "retries": 2 }',
      '  ]',
      '}',
    ]);
    expect(problemsOf(await validateGraphFile(file))).toEqual([
      "5:38: task 'b': unknown dependency 'z'",
      "5:117: task 'b': unknown key 'retries'",
    ]);
    const valid = await graphFile('valid.json', [
      JSON.stringify({ id: 'j', tasks: [{ key: 'a', run: { function: 'f' }, verify: { function: 'v' } }] }, null, '\t'),
    ]);
    expect(await validateGraphFile(valid)).toMatchObject({ valid: true, graph: { id: 'j', tasks: [{ key: 'a' }] } });
  });

  it('refuses a file it cannot read as invalid input', async () => {
    const missing = path.join(dir, 'missing.yaml');
    await expect(validateGraphFile(missing)).rejects.toThrow(InvalidInputError);
    await expect(readGraphFile(missing)).rejects.toThrow(`invalid input: cannot read ${missing}: ENOENT`);
  });
});
