// U11: paths tied to objects, end to end: real command agents commit on a real worker, Postgres and
// Temporal. An object reserves api/**; a run whose commit changes a reserved path fails unless its
// agent holds the object, with the reason on the task and on the object; the holder's own change,
// and a change elsewhere, are verified.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventRead } from '../../src/db/sql/reads.js';
import { InvalidInputError } from '../../src/errors.js';
import { createObject, reserveObjectPaths, takeObject } from '../../src/objects/objectStore.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { uniqueObjectKey } from '../helpers/objects.js';
import { useTaskStack } from '../helpers/taskStack.js';

const workspace = useCommandWorkspace('reserved', { 'api/routes.ts': 'export const routes = [];\n', 'docs/readme.md': '# docs\n' });
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });

const editApi = `echo '// v2' >> api/routes.ts && ${commitAll('change the api')}`;

describe('paths tied to objects (U11)', () => {
  it('fails a run whose commit changes a reserved path its agent does not hold; the holder and other paths pass', async () => {
    const key = uniqueObjectKey('api-owner');
    await createObject(stack.db.pool, 'lead', { key, silenceTimeoutMs: 3_600_000, defaultAccess: 'write' });
    expect(await reserveObjectPaths(stack.db.pool, 'lead', { key, paths: ['api/**'] })).toMatchObject({ key });
    await takeObject(stack.db.pool, 'bot-holder', { key, reason: 'reworking the api' });

    const id = `reserved-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { maxAttempts: 1, onVerificationFailure: 'fail' },
        tasks: [
          { key: 'intruder', run: { command: editApi, agent: 'bot-intruder' }, verify: 'true' },
          { key: 'holder', run: { command: editApi, agent: 'bot-holder' }, verify: 'true' },
          {
            key: 'elsewhere',
            run: { command: `echo more >> docs/readme.md && ${commitAll('docs')}`, agent: 'bot-intruder' },
            verify: 'true',
          },
        ],
      },
      'test',
    );
    const result = await stack.client.waitForGraph(id);
    expect(result.failed).toEqual([`${id}/intruder`]);
    expect(result.verified.sort()).toEqual([`${id}/elsewhere`, `${id}/holder`]);

    const intruder = await stack.client.events(`${id}/intruder`);
    expect(intruder.map((e) => e.kind)).toEqual(['created', 'claimed', 'failed']);
    expect(intruder.at(-1)!.reason).toContain(`changes api/routes.ts, reserved by ${key}, which bot-holder holds, not bot-intruder`);
    const onObject = (await eventRead(stack.db.pool, 'object', key)).filter((e) => e.kind === 'reserved_path_refused');
    expect(onObject).toEqual([
      expect.objectContaining({
        actor: 'bot-intruder',
        details: expect.objectContaining({ taskId: `${id}/intruder`, paths: ['api/routes.ts'] }),
      }),
    ]);
  });

  it('lets only the creator reserve, and refuses paths outside the repository', async () => {
    const key = uniqueObjectKey('reserving');
    await createObject(stack.db.pool, 'lead', { key });
    await expect(reserveObjectPaths(stack.db.pool, 'someone', { key, paths: ['api/**'] })).rejects.toMatchObject({
      code: 'permission_denied',
    });
    for (const bad of ['../etc', '/abs', 'a//b', 'src/./x', ''])
      await expect(reserveObjectPaths(stack.db.pool, 'lead', { key, paths: [bad] }), bad).rejects.toThrow(InvalidInputError);
    // None frees them.
    await reserveObjectPaths(stack.db.pool, 'lead', { key, paths: ['api/**'] });
    await reserveObjectPaths(stack.db.pool, 'lead', { key, paths: [] });
    const { rows } = await stack.db.pool.query('SELECT paths FROM baton.objects WHERE key = $1', [key]);
    expect(rows[0].paths).toEqual([]);
  });
});
