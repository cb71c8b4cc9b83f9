// The operator's page (issue 23, SPEC U4) in a real browser: Chromium driven by playwright-core
// against `baton serve`'s API and page on a real Postgres and Temporal. The README demo runs while
// the page is open (its own worker processes), and the page must follow it without a reload; then
// the refused late write stands out in the timeline, the reconciled tool call is marked, a shared
// object's handoff shows step by step, a cancel from the page is recorded under the operator's
// identity, and missing, wrong and expired tokens are refused plainly.
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgentApi } from '../../src/api/agentApi.js';
import { startAgentServer, type AgentServer } from '../../src/api/agentServer.js';
import { loadOperatorPage } from '../../src/api/operatorPage.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { chromiumLaunchOptions } from '../../src/testkit/browser.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { workflowControl } from '../../src/workflowControl.js';
import { call, tokenFor } from '../api/helpers.js';
import { cleanEnv, startCli } from '../helpers/cli.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';

/** Where the page's screenshots go when asked for (the ones in docs/ were taken this way). */
const SCREENSHOTS_DIR = process.env.BATON_SCREENSHOTS_DIR;
const TEMPORAL_UI = 'http://temporal-ui.example:8233';
/** Markup a hostile agent or submitter writes where the page shows text. */
const HOSTILE_MARKUP = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
/** How long the page may take to show what the store already holds, on a busy machine. */
const SHOWN_MS = 120_000;
/** How long a test may take: longer than the demo's start and its own 600 s deadline, so a stuck demo fails with its timeline. */
const TEST_MS = 900_000;
/** How a scripted agent commits its work. */
const COMMIT = commitAll('the work');

const workspace = useCommandWorkspace('operator-page');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });

let server: AgentServer;
let api: ReturnType<typeof createAgentApi>;
let browser: Browser;
let reader: string;
/** What the pages said went wrong: a violation of their policy, an uncaught error. */
const pageProblems: string[] = [];
let operator: string;

beforeAll(async () => {
  const agent = await stack.db.login('baton_agent');
  api = createAgentApi({
    db: agent.pool,
    page: await loadOperatorPage({ temporalUi: { url: TEMPORAL_UI, namespace: stack.temporal.namespace } }),
    workflows: async () => workflowControl(stack.temporal.client, stack.temporal.taskQueue),
  });
  server = await startAgentServer(api, { host: '127.0.0.1', port: 0 });
  reader = (await tokenFor(stack.db, 'on-call', ['view'])).secret;
  operator = (await tokenFor(stack.db, 'ops-lead', ['admin'])).secret;
  browser = await chromium.launch(chromiumLaunchOptions());
});

afterAll(async () => {
  expect(pageProblems).toEqual([]);
  await browser?.close();
  await server?.close();
  await api?.close();
});

async function openPage(token: string | undefined, route = '#/', viewport = { width: 1280, height: 900 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(SHOWN_MS);
  // The page's own code must live within its policy, and throw nothing.
  page.on('console', (message) => {
    if (/Content Security Policy/.test(message.text())) pageProblems.push(message.text());
  });
  page.on('pageerror', (error) => pageProblems.push(error.message));
  await page.goto(`${server.url}/ui/${token ? `#token=${encodeURIComponent(token)}` : ''}`);
  if (token) await page.getByRole('status').filter({ hasText: 'live' }).waitFor();
  if (route !== '#/') await page.evaluate(`location.hash = ${JSON.stringify(route)}`);
  return page;
}

/** expect.poll with the patience a busy machine needs (its default is a second). */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: SHOWN_MS, interval: 100 });

/** Waits for `locator` to show; when it does not, the error holds what the page showed instead (and `context()`). */
async function shown(page: Page, locator: Locator, context: () => string = () => '', timeout = SHOWN_MS): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (error) {
    const text = await page
      .locator('body')
      .innerText()
      .catch((e: Error) => `(unreadable: ${e.message})`);
    throw new Error(`${(error as Error).message}\nthe page showed:\n${text}\n${context()}`);
  }
}

/** Scrolls the page so the section `selector` heads the window. */
async function scrollTo(page: Page, selector: string): Promise<void> {
  await page.evaluate(`window.scrollBy(0, document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect().top - 60)`);
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS_DIR) return;
  await mkdir(SCREENSHOTS_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS_DIR, `${name}.png`), fullPage: false });
}

describe("the operator's page", { timeout: TEST_MS }, () => {
  it('refuses a missing, a wrong and an expired token, plainly, and serves nothing else without one', async () => {
    const page = await openPage(undefined);
    await page.getByRole('heading', { name: 'baton' }).waitFor();
    // The data is the API's: without a token it answers 401, whatever the page does.
    expect((await call(server.url, undefined, 'graphs.list', {})).status).toBe(401);

    await page.getByLabel('Token').fill('baton_not-a-token-baton-issued-0000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByRole('alert').textContent()).toContain('The token was refused');
    expect(await page.getByRole('alert').textContent()).toContain('not one baton issued');

    const expired = (await tokenFor(stack.db, 'former-contractor', ['view'], 1)).secret;
    await page.getByLabel('Token').fill(expired);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByRole('alert').textContent()).toMatch(/expired at/);
    // An agent's token (read, not view) is told what the page needs.
    const agentish = (await tokenFor(stack.db, 'an-agent', ['read', 'notes', 'objects'])).secret;
    await page.getByLabel('Token').fill(agentish);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByRole('alert').textContent()).toContain('the page needs view (or admin)');
    // Nothing of the deployment was shown.
    expect(await page.getByRole('navigation').count()).toBe(0);
    await page.close();
  });

  it('shows the demo live: its graph appears, its tasks move without a reload, the refused late write and the reconciled call stand out', async () => {
    const page = await openPage(reader);
    // The token came in the address's fragment; it is kept for the tab and taken out of the address.
    expect(page.url()).not.toContain('token=');
    await page.evaluate('window.loadedOnce = true');

    const demo = startCli(['demo'], cleanEnv({ DATABASE_URL: stack.db.url, TEMPORAL_ADDRESS: inject('temporalAddress') }));
    try {
      // The graph list follows the event log: the demo's graph appears without a reload.
      const row = page.locator('tr[data-graph^="sdk-"]');
      // As long as the demo may take to start its workers and submit (it gives up after 600 s).
      await waitFor('the demo graph on the page', () => shown(page, row, () => demo.output(), 1_000), {
        timeoutMs: 600_000,
        // The waits end as soon as the demo fails, with its output.
        abort: demo.failure,
      });
      const graphId = (await row.getAttribute('data-graph'))!;
      await row.getByRole('link', { name: graphId }).click();
      await page.locator('.dag-node[data-task="request"]').waitFor();

      // Every status each task showed, as the page drew it, until all three were verified.
      const seen = new Map<string, Set<string>>();
      await waitFor(
        'the three tasks verified on the page',
        async () => {
          const nodes = await page
            .locator('.dag-node')
            .evaluateAll((els) => els.map((e) => [e.getAttribute('data-task'), e.getAttribute('data-status')]));
          for (const [key, status] of nodes) seen.set(key!, (seen.get(key!) ?? new Set()).add(status!));
          if (nodes.length !== 3 || nodes.some(([, status]) => status !== 'verified'))
            throw new Error(`statuses so far: ${JSON.stringify(nodes)}`);
        },
        { timeoutMs: 600_000, intervalMs: 100, abort: demo.failure },
      );
      expect(await demo.exited, demo.output()).toBe(0);
      // The tests task waited on the others: the page showed it blocked (or ready) before verified, all without a reload.
      expect(
        [...seen.get('tests')!].some((s) => s !== 'verified'),
        JSON.stringify([...seen]),
      ).toBe(true);
      expect(await page.evaluate('window.loadedOnce')).toBe(true);
      await eventually(() => page.locator('.progress').first().textContent()).toContain('3/3 verified');
      // A small graph's canvas is only as tall as the graph (its height is set within the page's policy).
      expect(await page.locator('.dag-canvas').evaluate((el) => el.getBoundingClientRect().height)).toBeLessThan(300);
      await screenshot(page, 'operator-page-graph');

      // Its tasks' workflows: a link to the Temporal UI's list, whose filter Temporal answers with exactly them.
      const workflowsLink = page.getByRole('link', { name: /in Temporal$/ });
      const query = `WorkflowId STARTS_WITH "baton-task:${graphId}/"`;
      expect(await workflowsLink.getAttribute('href')).toBe(
        `${TEMPORAL_UI}/namespaces/${stack.temporal.namespace}/workflows?query=${encodeURIComponent(query)}`,
      );
      // Temporal's visibility follows its workflows a moment behind.
      const listed = async () => {
        const ids: string[] = [];
        for await (const execution of stack.temporal.client.workflow.list({ query })) ids.push(execution.workflowId);
        return ids.sort();
      };
      await eventually(listed).toEqual(['request', 'response', 'tests'].map((key) => `baton-task:${graphId}/${key}`));

      // The request task: recovered from the frozen worker; the thawed worker's late writes refused and marked.
      await page.getByRole('link', { name: 'request', exact: true }).click();
      const timeline = page.getByRole('region', { name: 'Ownership timeline' });
      await timeline.locator('tr[data-kind="stale_write_refused"]').first().waitFor();
      const refused = timeline.locator('tr[data-kind="stale_write_refused"]').first();
      expect(await refused.getAttribute('class')).toBe('event-refused');
      expect(await refused.textContent()).toMatch(/refused/);
      expect(await timeline.locator('tr[data-kind="reclaimed_after_silence"]').getAttribute('class')).toBe('event-reclaim');
      // Each row has its database time, actor and claim version.
      const cells = await refused.locator('td').allTextContents();
      expect(cells[1]).toMatch(/\d/);
      expect(cells[3]).toMatch(/worker-a/);
      expect(cells[4]).toBe('1');
      await scrollTo(page, '#timeline');
      await screenshot(page, 'operator-page-timeline');

      // The response task: its first artifact rejected, with the verifier's output; the rerun verified.
      await page.goto(`${server.url}/ui/#/task/${encodeURIComponent(`${graphId}/response`)}`);
      const verifications = page.locator('details.verification');
      await eventually(() => verifications.count()).toBe(2);
      expect(await page.locator('details.verification.failed pre.output').textContent()).not.toBe('(no output)');

      // The tests task: the pull request call reconciled by the next owner is marked.
      await page.goto(`${server.url}/ui/#/task/${encodeURIComponent(`${graphId}/tests`)}`);
      const call = page.getByRole('region', { name: 'Tool calls' }).locator('tr[data-step]');
      await call.first().waitFor();
      expect(await call.locator('.badge.reconciled').count()).toBe(1);
      await scrollTo(page, '#tools');
      await screenshot(page, 'operator-page-tool-calls');
    } finally {
      if (demo.child.exitCode === null) demo.child.kill('SIGTERM');
      await page.close();
    }
  });

  it("shows a shared object's handoff step by step: holder, open offer, the successor holding it, and the log", async () => {
    const key = `plan-${randomUUID().slice(0, 8)}`;
    const alice = (await tokenFor(stack.db, 'alice', ['read', 'objects'])).secret;
    const bob = (await tokenFor(stack.db, 'bob', ['read', 'objects'])).secret;
    const act = async (secret: string, operation: string, input: Record<string, unknown>) => {
      const answer = await call(server.url, secret, operation, { key, ...input });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body as { token: number; version: number };
    };
    await act(alice, 'object.create', { content: 'v0', defaultAccess: 'view', silenceTimeoutMs: 600_000 });
    await act(alice, 'object.grant', { grantee: 'bob', access: 'write' });
    const page = await openPage(reader, `#/objects/${encodeURIComponent(key)}`);
    const row = page.locator(`tr[data-object="${key}"]`);
    const field = (name: string) => row.locator(`td[data-field="${name}"]`);
    await eventually(() => field('holder').textContent()).toBe('nobody');

    const taken = await act(alice, 'object.take', {});
    await eventually(() => field('holder').textContent()).toBe('alice');
    expect(await field('token').textContent()).toBe(String(taken.token));

    await act(alice, 'object.offer', { token: taken.token, version: taken.version, successor: 'bob' });
    await eventually(() => field('offer').textContent()).toContain('alice → bob');
    await screenshot(page, 'operator-page-object-offer');

    const accepted = await act(bob, 'object.accept', { version: taken.version });
    await eventually(() => field('holder').textContent()).toBe('bob');
    expect(await field('offer').textContent()).toBe('none');
    expect(await field('token').textContent()).toBe(String(accepted.token));

    const kinds = await page
      .getByRole('region', { name: 'Object log' })
      .locator('tr[data-kind]')
      .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-kind')} by ${r.querySelectorAll('td')[3]!.textContent}`));
    expect(kinds).toEqual(['created by alice', 'granted by alice', 'taken by alice', 'offered by alice', 'accepted by bob']);
    await page.close();
  });

  it('cancels a running task from the page with the reason, recorded under the operator token’s identity; a reader gets no such button', async () => {
    const graphId = `page-cancel-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id: graphId,
        repo: workspace.repo,
        policy: { heartbeatTimeoutMs: 10_000, maxAttempts: 1 },
        // What an agent or a submitter writes is shown as text, never run: the page's policy and its views both hold.
        tasks: [{ key: 'long', description: HOSTILE_MARKUP, run: { command: 'echo working; sleep 600' }, verify: { command: 'true' } }],
      },
      'test',
    );
    const taskId = `${graphId}/long`;
    const readerPage = await openPage(reader, `#/task/${encodeURIComponent(taskId)}`);
    await readerPage.getByRole('heading', { name: /Task long/ }).waitFor();
    expect(await readerPage.getByRole('button', { name: /Cancel task/ }).count()).toBe(0);
    // The API refuses the reader's cancel as well: the page is not the guard.
    const refused = await call(server.url, reader, 'task.cancel', { taskId, reason: 'not mine to cancel' });
    expect(refused.status).toBe(403);
    await readerPage.close();

    expect((await call(server.url, operator, 'note.add', { taskId, text: HOSTILE_MARKUP })).status).toBe(200);
    const page = await openPage(operator, `#/task/${encodeURIComponent(taskId)}`);
    await page.locator('p.note').filter({ hasText: HOSTILE_MARKUP }).waitFor();
    expect(await page.locator('p.description').textContent()).toBe(HOSTILE_MARKUP);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    expect(await page.locator('main img').count()).toBe(0);
    // The agent's output reaches the page through the run's heartbeats.
    await page.locator('section[aria-labelledby="log"] pre.output').filter({ hasText: 'working' }).waitFor();
    await page.getByRole('button', { name: 'Cancel task…' }).click();
    await page.getByLabel('Reason (recorded)').fill('stuck on a flaky mirror');
    await page.getByRole('button', { name: 'Cancel task', exact: true }).press('Enter');
    await eventually(() => page.locator('h1 .badge').textContent()).toBe('cancelled');
    const cancelled = page.getByRole('region', { name: 'Ownership timeline' }).locator('tr[data-kind="cancelled"]');
    await cancelled.waitFor();
    expect(await cancelled.textContent()).toContain('stuck on a flaky mirror');

    const events = await stack.client.events(taskId);
    const event = events.find((e) => e.kind === 'cancelled');
    expect(event).toMatchObject({ actor: 'ops-lead', reason: 'stuck on a flaky mirror' });
    // Temporal was told: the task's workflow ends cancelled (its run killed the agent).
    await waitFor(
      'the task workflow cancelled',
      async () => {
        const description = await stack.temporal.client.workflow.getHandle(`baton-task:${taskId}`).describe();
        if (description.status.name !== 'CANCELLED') throw new Error(`workflow ${description.status.name}`);
      },
      { timeoutMs: SHOWN_MS, intervalMs: 200 },
    );
    await page.close();
  });

  it('approves a task awaiting approval from the page, recorded as its verification by the approver; a reader gets no such button', async () => {
    const graphId = `page-approve-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id: graphId,
        repo: workspace.repo,
        tasks: [{ key: 'ship', run: { command: `echo shipped > shipped.txt && ${COMMIT}` }, verify: { command: 'true', approval: true } }],
      },
      'test',
    );
    const taskId = `${graphId}/ship`;
    const approver = (await tokenFor(stack.db, 'release-lead', ['view', 'approve'])).secret;
    const readerPage = await openPage(reader, `#/task/${encodeURIComponent(taskId)}`);
    await eventually(() => readerPage.locator('h1 .badge').textContent()).toBe('awaiting_approval');
    expect(await readerPage.getByRole('button', { name: /Approve/ }).count()).toBe(0);
    await readerPage.close();

    const page = await openPage(approver, `#/task/${encodeURIComponent(taskId)}`);
    await page.getByRole('button', { name: 'Approve…' }).click();
    await page.getByLabel('Reason (recorded)').fill('release window open');
    await page.getByRole('button', { name: 'Approve', exact: true }).press('Enter');
    await eventually(() => page.locator('h1 .badge').textContent()).toBe('verified');
    const approved = page.getByRole('region', { name: 'Ownership timeline' }).locator('tr[data-kind="approved"]');
    await approved.waitFor();
    expect(await approved.textContent()).toContain('release window open');
    expect((await stack.client.events(taskId)).find((e) => e.kind === 'approved')).toMatchObject({ actor: 'release-lead' });
    expect((await stack.client.waitForGraph(graphId)).verified).toEqual([taskId]);
    await page.close();
  });

  it("shows an agent's proposed subtasks on its graph's page; an admin accepts them there and they run, a reader gets no such button", async () => {
    const graphId = `page-propose-${randomUUID().slice(0, 8)}`;
    // Every task runs this agent; only plan proposes (its context names its key).
    const agent = [
      'set -e',
      'baton api context > context.json',
      `if node -e 'process.exit(JSON.parse(require("fs").readFileSync("context.json", "utf8")).key === "plan" ? 0 : 1)'; then`,
      `baton api task.propose '{"tasks": [{"key": "docs", "description": "document the plan", "dependsOn": ["plan"]}]}'`,
      'fi',
      COMMIT,
    ].join('\n');
    await stack.client.submitGraph(
      {
        id: graphId,
        repo: workspace.repo,
        tasks: [{ key: 'plan', run: { command: agent, agent: 'planner' }, verify: { command: 'true' } }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(graphId)).verified).toEqual([`${graphId}/plan`]);
    const readerPage = await openPage(reader, `#/graph/${graphId}`);
    const proposals = readerPage.getByRole('region', { name: /Subtasks of proposal/ });
    await proposals.waitFor();
    expect(await proposals.textContent()).toContain('document the plan');
    expect(await readerPage.getByRole('button', { name: /Accept proposal/ }).count()).toBe(0);
    await readerPage.close();

    const page = await openPage(operator, `#/graph/${graphId}`);
    await page.getByRole('button', { name: /^Accept proposal \d+…$/ }).click();
    await page.getByLabel('Reason (recorded)').fill('docs are due');
    await page.getByRole('button', { name: /^Accept proposal \d+$/ }).press('Enter');
    await page.locator('tr[data-task="docs"][data-status="verified"]').waitFor();
    expect(await page.getByRole('region', { name: /Subtasks of proposal/ }).count()).toBe(0);
    expect((await stack.client.events(graphId)).find((e) => e.kind === 'tasks_added')?.actor).toBe('ops-lead');
    await page.close();
  });

  it('works on a narrow window and by keyboard, and says plainly when a graph does not exist or the connection is lost', async () => {
    const graphId = `page-narrow-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id: graphId,
        repo: workspace.repo,
        tasks: [
          {
            key: 'only',
            run: {
              command:
                'echo x > narrow.txt && git add narrow.txt && git -c user.name=agent -c user.email=agent@localhost commit -qm narrow',
            },
            verify: { command: 'true' },
          },
        ],
      },
      'test',
    );
    const page = await openPage(reader, `#/graph/${graphId}`, { width: 390, height: 800 });
    await page.locator('tr[data-task="only"]').waitFor();
    // Nothing runs off the side of a phone's screen: wide tables scroll in their own box.
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await screenshot(page, 'operator-page-narrow');

    // By keyboard: Tab reaches the task's link in the table, Enter opens it.
    const link = page.locator('tr[data-task="only"] a');
    const focused = () => link.evaluate((el) => el === el.ownerDocument.activeElement);
    for (let i = 0; i < 200 && !(await focused()); i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Task only/ }).waitFor();

    await page.evaluate("location.hash = '#/graph/no-such-graph'");
    await eventually(() => page.getByRole('alert').first().textContent()).toContain('graph no-such-graph does not exist');

    // The server goes away: the page says so, and does not pretend to be live.
    await server.close();
    await eventually(() => page.getByRole('status').filter({ hasText: 'connection lost' }).count()).toBe(1);
    await page.close();
  });
});
