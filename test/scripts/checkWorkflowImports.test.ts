import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkWorkflowImports } from '../../scripts/checkWorkflowImports.js';

describe('determinism guard for workflows/', () => {
  it('finds no forbidden import in the real workflow code', () => {
    expect(checkWorkflowImports(fileURLToPath(new URL('../../workflows', import.meta.url)))).toEqual([]);
  });

  it('reports Node built-ins, pg and src/db, also through a local helper, but not type-only imports', () => {
    const violations = checkWorkflowImports(fileURLToPath(new URL('../fixtures/badWorkflows', import.meta.url)));
    expect(violations.map((v) => `${v.specifier} (${v.reason})`).sort()).toEqual([
      '../../../src/db/pool.js (non-deterministic code under src/db)',
      'crypto (Node built-in)',
      'node:fs (Node built-in)',
      'pg (Postgres driver)',
    ]);
  });
});
