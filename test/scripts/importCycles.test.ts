import { describe, expect, it } from 'vitest';
import { fileTree as tree } from '../helpers/fileTree.js';
import { checkFileImportCycles, checkImportCycles } from '../../scripts/checkImportCycles.js';

describe('layering', () => {
  it('no two folders of baton import each other', () => {
    expect(checkImportCycles().map((c) => c.nodes.join(' -> '))).toEqual([]);
  });

  it('no two files of baton import each other', () => {
    expect(checkFileImportCycles().map((c) => c.nodes.join(' -> '))).toEqual([]);
  });

  it('reports a loop between files of one folder, type-only imports included, once per group of files', async () => {
    const root = await tree({
      // Inside one folder, so the folder check sees nothing: the type-only import of 0.2's wakeTask.
      'workflows/task.ts': "import { wake } from './wake.js';\n",
      'workflows/wake.ts': "import type { task } from './task.js';\nimport { d } from './definitions.js';\n",
      'workflows/definitions.ts': 'export const d = 1;\n',
      // Three files in one loop, with a shortcut: one report, along the shortest way round.
      'src/a/one.ts': "import { two } from './two.js';\n",
      'src/a/two.ts': "import { three } from './three.js';\nimport { one } from './one.js';\n",
      'src/a/three.ts': "import { one } from './one.js';\n",
    });
    expect(checkImportCycles(root)).toEqual([]);
    expect(checkFileImportCycles(root)).toEqual([
      { nodes: ['src/a/one', 'src/a/two'], evidence: ["src/a/one.ts: './two.js'", "src/a/two.ts: './one.js'"] },
      { nodes: ['workflows/task', 'workflows/wake'], evidence: ["workflows/task.ts: './wake.js'", "workflows/wake.ts: './task.js'"] },
    ]);
  });

  it('reports a loop between folders, type-only imports included, with the imports behind it', async () => {
    const root = await tree({
      'src/db/sql/row.ts': "import type { Row } from '../../tools/types.js';\n",
      'src/tools/types.ts': "export type Row = {};\nimport { x } from '../tasks/x.js';\n",
      'src/tasks/x.ts': "import { y } from '../db/y.js';\nexport const x = 1;\n",
      'src/errors.ts': "import { z } from './tools/types.js';\n",
      'src/tools/gateway.ts': "import { e } from '../errors.js';\n",
    });
    expect(checkImportCycles(root)).toEqual([
      {
        nodes: ['src/db', 'src/tools', 'src/tasks'],
        evidence: ["src/db/sql/row.ts: '../../tools/types.js'", "src/tools/types.ts: '../tasks/x.js'", "src/tasks/x.ts: '../db/y.js'"],
      },
      { nodes: ['src/errors', 'src/tools'], evidence: ["src/errors.ts: './tools/types.js'", "src/tools/gateway.ts: '../errors.js'"] },
    ]);
  });
});
