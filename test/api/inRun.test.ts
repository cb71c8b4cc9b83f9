// The agent API inside a run (issue 12): a command agent, isolated as a root worker isolates it by
// default, reaches its run's endpoint with the BATON_URL and BATON_TOKEN it was given, as the
// identity its task names, through `baton api`, `baton object` and an MCP client started from the
// run's .mcp.json. Real Postgres, real Temporal, a real worker.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createObject, grantObjectAccess } from '../../src/objects/objectStore.js';
import { git } from '../../src/runners/git.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { uniqueObjectKey } from '../helpers/objects.js';

const PROBE = fileURLToPath(new URL('./mcpStdioProbe.ts', import.meta.url));
// The agent's folder has no node_modules: tsx is named by its path in baton's tree.
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url));

const workspace = useCommandWorkspace('inrun');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });

describe('the agent API inside a run', () => {
  it("serves a command agent as its task's agent: context, notes, shared objects and MCP over stdio, with no way to name another actor", async () => {
    const id = `inrun-${randomUUID().slice(0, 8)}`;
    const key = uniqueObjectKey('plans/inrun');
    const client = await stack.db.login('baton_client');
    await createObject(client.pool, 'lead', { key, content: 'plan v1' });
    await grantObjectAccess(client.pool, 'lead', { key, grantee: 'planner', access: 'write' });
    const agent = [
      'set -e',
      'baton api context > context.json',
      `baton api note.add '{"text":"taking the plan"}' > note.json`,
      `baton object take ${key} --reason "editing" > take.txt`,
      // Naming someone else: as a field, and with --as; both refused.
      `if baton api note.add '{"text":"x","actor":"lead"}' 2> forged-field.txt; then echo accepted >> forged-field.txt; fi`,
      `if baton object take ${key} --as lead 2> forged-as.txt; then echo accepted >> forged-as.txt; fi`,
      `node --import ${TSX} ${PROBE} > mcp.json`,
      commitAll('agent work'),
    ].join('\n');
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        tasks: [
          {
            key: 'plan',
            description: 'revise the plan',
            run: { command: agent, agent: 'planner' },
            verify: { command: 'test -s context.json && test -s mcp.json' },
          },
        ],
      },
      'test',
    );
    expect(await stack.client.waitForGraph(id)).toMatchObject({ verified: [`${id}/plan`], failed: [] });
    const task = await stack.client.task(`${id}/plan`);
    const revision = task.artifact!.revision;
    const file = async (name: string) => git(workspace.repo, ['show', `${revision}:${name}`]);

    const context = JSON.parse(await file('context.json'));
    expect(context).toMatchObject({
      identity: 'planner',
      taskId: `${id}/plan`,
      key: 'plan',
      description: 'revise the plan',
      claimVersion: task.claimVersion,
      upstream: [],
    });
    expect(await file('take.txt')).toMatch(new RegExp(`${key.replaceAll('.', '\\.')}: version 1, token \\d+\\n  holder: planner since`));
    expect(await file('forged-field.txt')).toMatch(
      /refused \(invalid_input\): invalid input: note.add: unexpected field\(s\) actor: the actor is always the token's identity/,
    );
    expect(await file('forged-field.txt')).not.toMatch(/accepted/);
    expect(await file('forged-as.txt')).toMatch(
      /--as is for administrators on the database; with BATON_TOKEN set, the token decides who you are/,
    );
    expect(await file('forged-as.txt')).not.toMatch(/accepted/);
    const mcp = JSON.parse(await file('mcp.json'));
    // A run token's tools: its run's and its scopes' (read, notes, objects); no pool_claim, and no
    // tool_call, since this worker has no tools.
    expect(mcp.tools).toEqual(expect.arrayContaining(['context', 'heartbeat', 'submit', 'object_take', 'note_add', 'notes_list']));
    expect(mcp.tools).not.toContain('tool_call');
    expect(mcp.tools).not.toContain('pool_claim');
    expect(mcp.whoami).toMatchObject({ isError: false, body: { identity: 'planner', taskId: `${id}/plan` } });
    expect(mcp.forged).toMatchObject({
      isError: true,
      body: {
        code: 'invalid_input',
        detail: expect.stringMatching(/note.add: unexpected field\(s\) actor: the actor is always the token's identity/),
      },
    });

    // The MCP config was there for the agent, but kept out of its commit.
    const committed = (await git(workspace.repo, ['show', '--name-only', '--format=', revision])).split('\n');
    expect(committed).not.toContain('.mcp.json');
    expect(committed).toEqual(expect.arrayContaining(['context.json', 'mcp.json']));

    const { rows: notes } = await stack.db.pool.query('SELECT author, claim_version, body FROM baton.task_notes WHERE task_id = $1', [
      `${id}/plan`,
    ]);
    expect(notes.map((n) => ({ ...n, claim_version: Number(n.claim_version) }))).toEqual([
      { author: 'planner', claim_version: task.claimVersion, body: 'taking the plan' },
    ]);
    const { rows: objectEvents } = await stack.db.pool.query(
      `SELECT kind, actor FROM baton.events WHERE subject_kind = 'object' AND subject_id = $1 ORDER BY subject_seq`,
      [key],
    );
    expect(objectEvents.map((e) => `${e.kind}:${e.actor}`)).toEqual(['created:lead', 'granted:lead', 'taken:planner']);
    // One run token, for the identity the task names, bound to the claim the run held; only its hash is stored.
    const { rows: tokens } = await stack.db.pool.query('SELECT identity, claim_version FROM baton.agent_tokens WHERE task_id = $1', [
      `${id}/plan`,
    ]);
    expect(tokens.map((t) => [t.identity, Number(t.claim_version)])).toEqual([['planner', task.claimVersion]]);
  });
});
