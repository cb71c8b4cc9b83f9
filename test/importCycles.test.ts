import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImportCycles } from '../scripts/checkImportCycles.js';

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'baton-layers-'));
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
  return root;
}

describe('layering', () => {
  it('no two folders of baton import each other', () => {
    expect(checkImportCycles().map((c) => c.nodes.join(' -> '))).toEqual([]);
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
