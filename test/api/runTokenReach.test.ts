// A command run's token works only from inside its run (issue 19, S6). A real command agent, as a
// root worker isolates it by default, leaks its BATON_TOKEN in a note; used on `baton serve` (the
// agent API on a baton_agent login) the token is refused (403 `outside_run`, recorded) while the
// run lasts, and the same token keeps working on the run's own endpoint, where the agent reads its
// upstream's notes and is refused another graph's. Real Postgres, real Temporal, a real worker.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { taskNoteAdd } from '../../src/db/sql/ownerWrites.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { git } from '../../src/runners/git.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { call, useAgentServer } from './helpers.js';

const workspace = useCommandWorkspace('runreach');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });
const serve = useAgentServer(() => stack.db);

/** What the test writes in the task's notes once it has tried the leaked token outside the run. */
const GO_ON = 'tried outside: carry on';

describe("a command run's token", () => {
  it("is refused on baton serve and works on its own run's endpoint, while the run lasts", async () => {
    const id = `reach-${randomUUID().slice(0, 8)}`;
    const otherGraph = await insertGraph(stack.db.pool, { elsewhere: [] }, { prefix: 'reach-other' });
    const elsewhere = `${otherGraph}/elsewhere`;
    await taskNoteAdd(stack.db.pool, elsewhere, 'someone', 'not for the leaker');
    const agent = [
      'set -e',
      // The leak: any channel out of the run would do; a note is one the test can read.
      'baton api note.add "{\\"text\\":\\"token $BATON_TOKEN\\"}" > /dev/null',
      `i=0; until baton api notes.list | grep -q '${GO_ON}'; do i=$((i+1)); [ $i -lt 600 ] || exit 9; sleep 0.2; done`,
      'baton api whoami > whoami.json',
      `baton api notes.list '{"taskId":"${id}/up"}' > upstream-notes.json`,
      `if baton api notes.list '{"taskId":"${elsewhere}"}' 2> elsewhere.txt; then echo accepted >> elsewhere.txt; fi`,
      commitAll('agent work'),
    ].join('\n');
    const upAgent = [`baton api note.add '{"text":"up: the parser is done"}' > /dev/null`, 'echo up > up.txt', commitAll('up work')].join(
      '\n',
    );
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        tasks: [
          { key: 'up', run: { command: upAgent }, verify: { command: 'test -s up.txt' } },
          { key: 'leak', dependsOn: ['up'], run: { command: agent, agent: 'leaker' }, verify: { command: 'test -s whoami.json' } },
        ],
      },
      'test',
    );
    const taskId = `${id}/leak`;
    let secret = '';
    try {
      await waitFor(
        'the agent to leak its token',
        async () => {
          const { rows } = await stack.db.pool.query("SELECT body FROM baton.task_notes WHERE task_id = $1 AND body LIKE 'token %'", [
            taskId,
          ]);
          if (!rows[0]) throw new Error('no leak yet');
          secret = (rows[0].body as string).slice('token '.length);
        },
        { timeoutMs: 90_000, intervalMs: 100 },
      );
      // Outside the run, on the server remote agents use, the run's token does nothing, and that is recorded.
      for (const [operation, body] of [
        ['whoami', {}],
        ['notes.list', {}],
        ['note.add', { text: 'from outside' }],
        ['context', {}],
      ] as const) {
        const reply = await call(serve.url, secret, operation, body);
        expect(reply.status, operation).toBe(403);
        expect(reply.body, operation).toMatchObject({ code: 'forbidden', refusal: 'outside_run' });
        expect(reply.body.detail).toMatch(
          new RegExp(`run token of claim version \\d+ of task ${taskId}: it works only on its run's own endpoint`),
        );
      }
      const { rows: refused } = await stack.db.pool.query(
        `SELECT details FROM baton.events WHERE subject_kind = 'agent' AND subject_id = 'leaker' AND kind = 'api_refused' ORDER BY subject_seq`,
      );
      expect(refused.map((r) => `${r.details.operation}:${r.details.refusal}`)).toEqual([
        'whoami:outside_run',
        'notes.list:outside_run',
        'note.add:outside_run',
        'context:outside_run',
      ]);
    } finally {
      await taskNoteAdd(stack.db.pool, taskId, 'lead', GO_ON);
    }
    expect(await stack.client.waitForGraph(id)).toMatchObject({ verified: expect.arrayContaining([`${id}/up`, taskId]), failed: [] });

    // Inside the run the same token went on working, for its own task and the upstream it is pinned to.
    const task = await stack.client.task(taskId);
    const file = async (name: string) => git(workspace.repo, ['show', `${task.artifact!.revision}:${name}`]);
    expect(JSON.parse(await file('whoami.json'))).toMatchObject({ identity: 'leaker', taskId, claimVersion: task.claimVersion });
    expect(JSON.parse(await file('upstream-notes.json')).map((n: { body: string }) => n.body)).toEqual(['up: the parser is done']);
    expect(await file('elsewhere.txt')).toMatch(/notes\.list refused \(forbidden\): .*not of task/);
    expect(await file('elsewhere.txt')).not.toMatch(/accepted/);
    const { rows: notes } = await stack.db.pool.query('SELECT body FROM baton.task_notes WHERE task_id = $1 ORDER BY id', [taskId]);
    expect(notes.map((n) => n.body)).not.toContain('from outside');
  });
});
