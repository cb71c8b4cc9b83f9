import { describe, expect, it } from 'vitest';
import { fileTree as tree } from '../helpers/fileTree.js';
import { checkUnusedExports } from '../../scripts/checkUnusedExports.js';

const TSCONFIG = JSON.stringify({
  compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true },
  include: ['src', 'workflows', 'test'],
});

// The real tree is checked by `npm run lint` (scripts/checkUnusedExports.ts), which `npm test` runs first.
describe('unused exports', () => {
  it('reports an export no other file imports, and counts tests, namespaces, re-exports and entry points as users', async () => {
    const root = await tree({
      'tsconfig.json': TSCONFIG,
      'package.json': '{ "type": "module" }',
      // Used: by another file, by a test only, through `ns.x`, by a re-export from the public API.
      'src/a.ts': 'export const used = 1;\nexport const onlyHere = 2;\nexport const dead = onlyHere;\nexport type Shape = { n: number };\n',
      'src/b.ts': "import { used } from './a.js';\nimport * as ns from './c.js';\nexport const b = used + ns.read;\n",
      'src/c.ts': 'export const read = 1;\nexport const unread = 2;\n',
      'src/d.ts': 'export function d() {}\n',
      'src/index.ts': "export { d } from './d.js';\nexport const api = 1;\n",
      'workflows/index.ts': 'export function someWorkflow() {}\n',
      'test/a.test.ts': "import type { Shape } from '../src/a.js';\nimport { b } from '../src/b.js';\n",
    });
    expect(checkUnusedExports(root)).toEqual([
      { file: 'src/a.ts', name: 'dead' },
      { file: 'src/a.ts', name: 'onlyHere' },
      { file: 'src/c.ts', name: 'unread' },
    ]);
  });
});
