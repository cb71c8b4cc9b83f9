import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRequirementIds, citedRequirementIds } from '../../scripts/checkRequirementIds.js';

// Built, not written out, so that this file itself cites no undefined id and no backwards range.
const UNDEFINED_ID = ['T', '99'].join('');
const BACKWARDS_RANGE = ['T2', 'T1'].join('-');

const DOC = [
  '# Requirements',
  '',
  '## Tasks (T1-T2)',
  '',
  '### T1 Task record',
  'text',
  '',
  '### T2 State machine',
  '',
  '### S3 Validation',
  '',
  '### D1 Claim race',
  '',
].join('\n');

const roots: string[] = [];

/** A scratch repository: docs/requirements.md plus the given files. */
function scratchRepo(files: Record<string, string>, doc = DOC): string {
  const root = mkdtempSync(path.join(tmpdir(), 'baton-reqids-'));
  roots.push(root);
  for (const [relative, text] of Object.entries({ 'docs/requirements.md': doc, ...files })) {
    mkdirSync(path.dirname(path.join(root, relative)), { recursive: true });
    writeFileSync(path.join(root, relative), text);
  }
  return root;
}

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('requirement id check (scripts/checkRequirementIds.ts)', () => {
  it('passes on this repository: every cited id is defined once in docs/requirements.md', () => {
    expect(checkRequirementIds()).toEqual([]);
  });

  it('reports a citation of an undefined id with its file and line', () => {
    const root = scratchRepo({
      'src/work.ts': `// T1 and D1 are defined.\n// Fixes ${UNDEFINED_ID}.\n`,
      'README.md': `See ${UNDEFINED_ID}.\n`,
    });
    expect(checkRequirementIds(root).map((p) => `${p.file}:${p.line} ${p.id}`)).toEqual([
      `README.md:1 ${UNDEFINED_ID}`,
      `src/work.ts:2 ${UNDEFINED_ID}`,
    ]);
  });

  it('reports an id defined twice', () => {
    const root = scratchRepo({}, `${DOC}\n### T2 Again\n`);
    expect(checkRequirementIds(root)).toEqual([
      expect.objectContaining({ file: 'docs/requirements.md', line: 14, id: 'T2', message: 'defines T2 again (first defined at line 8)' }),
    ]);
  });

  it('expands ranges, with a hyphen or an en dash, and reports a backwards one', () => {
    expect(citedRequirementIds('O1-O3 and D1–D2\nT4 - T5', 'DOT').map((c) => `${c.line}:${c.id}`)).toEqual([
      '1:O1',
      '1:O3',
      '1:D1',
      '1:D2',
      '1:O2',
      '2:T4',
      '2:T5',
    ]);
    const root = scratchRepo({ 'test/a.test.ts': '// T1-T3\n// D1-T2\n', 'docs/b.md': `${BACKWARDS_RANGE}\n` });
    expect(checkRequirementIds(root).map((p) => `${p.file}:${p.line} ${p.id}`)).toEqual([
      `docs/b.md:1 ${BACKWARDS_RANGE}`,
      'test/a.test.ts:1 T3',
    ]);
  });

  it('does not mistake identifiers, codes, hex or times for citations', () => {
    const text = [
      "USING ERRCODE = 'BT003'; new S3Client(); S3_BUCKET; 0xD1; #D1E1F1",
      'at 2026-01-01T12:00:00Z; T0 and T05 and T100; t1 d1; D1x; E2E',
    ].join('\n');
    expect(citedRequirementIds(text, 'DESTU')).toEqual([]);
    const root = scratchRepo({ 'src/codes.ts': text, 'bench/results/latest.json': `{"note": "${UNDEFINED_ID}"}` });
    expect(checkRequirementIds(root)).toEqual([]);
  });

  it('exits 1 from the command line and names the file and line', () => {
    const root = scratchRepo({ 'scripts/x.ts': `\n\n// ${UNDEFINED_ID}\n` });
    const tsx = createRequire(import.meta.url).resolve('tsx/cli');
    const script = fileURLToPath(new URL('../../scripts/checkRequirementIds.ts', import.meta.url));
    const run = spawnSync(process.execPath, [tsx, script, root], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toContain(`scripts/x.ts:3: cites ${UNDEFINED_ID}, which docs/requirements.md does not define`);
  });
});
