import path from 'node:path';
import { Option, type Command } from 'commander';
import { GRAPH_LIST_LIMIT_DEFAULT } from '../config.js';
import type { BatonClient } from '../client.js';
import { NotFoundError } from '../errors.js';
import type { Log } from '../log.js';
import type { GraphPolicy } from '../tasks/graphSpec.js';
import { GRAPH_STATES, TERMINAL_STATUSES, type GraphState } from '../tasks/states.js';
import { graphOf, isTaskId, taskIdOf } from '../tasks/taskId.js';
import type { TaskRow } from '../tasks/types.js';
import type { CliContext } from './context.js';
import { formatEvents, formatGraphs, formatTasks, summarise } from '../tasks/format.js';
import { liveBlock, type LiveOutput } from './liveBlock.js';
import { jsonOption, parseDuration, parsePositiveInt, taskQueueOption } from './options.js';

/** How many graphs one `baton archive run` archives unless told otherwise. */
const ARCHIVE_LIMIT_DEFAULT = 1_000;

/** How often `baton status` looks again while a graph runs. */
const STATUS_POLL_INTERVAL_MS = 1_000;

/** baton's client on a context; `startsWorkflows` connects to Temporal first, else it is never dialled. */
async function batonClient(context: CliContext, options: { startsWorkflows: boolean; taskQueue?: string }): Promise<BatonClient> {
  const [temporal, { createBatonClient }] = await Promise.all([
    context.temporal({ connect: options.startsWorkflows }),
    import('../client.js'),
  ]);
  return createBatonClient({ db: context.pool, temporal, taskQueue: options.taskQueue });
}

/** Nothing more happens without a person: finished, stale under policy `mark`, or waiting behind a failed task. */
const isSettled = (tasks: TaskRow[], policy: GraphPolicy) =>
  tasks.every(
    (t) =>
      TERMINAL_STATUSES.has(t.status) ||
      (t.status === 'stale' && policy.onUpstreamChange === 'mark') ||
      ((t.status === 'blocked' || t.status === 'stale') && tasks.some((u) => u.status === 'failed')),
  );

/** Writes a line on stdout, where a command's data goes (messages go to the log, stderr). */
const printLine: Log = (line) => process.stdout.write(`${line}\n`);

/**
 * Shows the graph's tasks on `out` (stdout for `status`, where a command's data goes; the log,
 * stderr, for `--watch`) whenever they change, until every task is settled; true when all are
 * verified. A terminal redraws the table in place.
 */
async function watchGraph(client: BatonClient, graphId: string, out: LiveOutput, options: { follow: boolean }): Promise<boolean> {
  const { policy } = await client.graph(graphId);
  const live = liveBlock(out);
  let last = '';
  for (;;) {
    const tasks = await client.graphTasks(graphId);
    const view = formatTasks(tasks);
    if (view !== last) {
      live.show(`\n[${new Date().toISOString().slice(11, 19)}Z] graph ${graphId}: ${summarise(tasks)}\n${view}`);
      last = view;
    }
    if (!options.follow || isSettled(tasks, policy)) return tasks.every((t) => t.status === 'verified');
    await new Promise((r) => setTimeout(r, STATUS_POLL_INTERVAL_MS));
  }
}

export function registerTaskCommands(program: Command, log: Log): void {
  program
    .command('submit')
    .description('validate a task graph (YAML), write it atomically and start it; nothing is written if it is invalid')
    .argument('<graph.yaml>', 'the graph: id, repo, policy and tasks with run, verify and dependsOn')
    .addOption(taskQueueOption('task queue of the workers that run it'))
    .option('--watch', 'show progress until the graph settles')
    .addOption(jsonOption('the graph as one JSON object: id and task ids'))
    .action(async (file: string, opts: { taskQueue: string; watch?: boolean; json?: boolean }) => {
      const { readGraphFile } = await import('../tasks/graphFile.js');
      const input = await readGraphFile(file);
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: true, taskQueue: opts.taskQueue });
        const graph = await client.submitGraph(input, operatorActor(), { resolveRepo: (repo) => path.resolve(path.dirname(file), repo) });
        printLine(opts.json ? JSON.stringify({ id: graph.id, tasks: graph.tasks.map((t) => taskIdOf(graph.id, t.key)) }) : graph.id);
        log(`Submitted graph ${graph.id} with ${graph.tasks.length} task(s). Follow it with: npx baton status ${graph.id}`);
        // The progress goes to stderr: stdout carries the graph's id alone, for a script to read.
        if (opts.watch && !(await watchGraph(client, graph.id, process.stderr, { follow: true }))) process.exitCode = 1;
      });
    });

  program
    .command('add')
    .description(
      "add tasks to a running graph: a YAML file with a tasks list, as a graph file has it, each depending on the graph's tasks or on others added with it; validated with the graph's own, nothing written if any is invalid",
    )
    .argument('<graph>', 'graph id')
    .argument('<tasks.yaml>', 'a mapping with a tasks list')
    .addOption(taskQueueOption('task queue of the workers that run it'))
    .addOption(jsonOption('the added tasks and their status as one JSON array'))
    .action(async (graphId: string, file: string, opts: { taskQueue: string; json?: boolean }) => {
      const { readGraphFile } = await import('../tasks/graphFile.js');
      const input = await readGraphFile(file);
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: true, taskQueue: opts.taskQueue });
        const added = await client.addTasks(graphId, input, operatorActor(), {
          resolveRepo: (repo) => path.resolve(path.dirname(file), repo),
        });
        if (opts.json) return printLine(JSON.stringify(added));
        for (const t of added) printLine(`${t.taskId}  ${t.status}`);
        log(`Added ${added.length} task(s) to graph ${graphId}. Follow it with: npx baton status ${graphId}`);
      });
    });

  program
    .command('rerun')
    .description("send a verified, stale or failed task round again on its dependencies' current revisions")
    .argument('<task>', 'task id, <graph>/<key>')
    .requiredOption('--reason <text>', 'why, for the event log')
    .addOption(taskQueueOption('task queue of the workers that run it'))
    .option('--watch', 'show progress of its graph until it settles')
    .action(async (taskId: string, opts: { reason: string; taskQueue: string; watch?: boolean }) => {
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: true, taskQueue: opts.taskQueue });
        await client.rerunTask(taskId, operatorActor(), opts.reason);
        log(`Task ${taskId} is ready again.`);
        if (opts.watch && !(await watchGraph(client, graphOf(taskId), process.stderr, { follow: true }))) process.exitCode = 1;
      });
    });

  program
    .command('cancel')
    .description(
      'cancel a graph (every unfinished task) or one task (<graph>/<key>): each is recorded as cancelled with the reason, ' +
        'its run is cancelled and its agent killed; a task being verified is left to finish',
    )
    .argument('<task-or-graph>', 'a task id such as sdk/tests, or a graph id')
    .requiredOption('--reason <text>', 'why, for the event log')
    .addOption(jsonOption('what was cancelled and left as one JSON object'))
    .action(async (id: string, opts: { reason: string; json?: boolean }) => {
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: true });
        const outcome = isTaskId(id)
          ? await client.cancelTask(id, operatorActor(), opts.reason)
          : await client.cancelGraph(id, operatorActor(), opts.reason);
        if (opts.json) return printLine(JSON.stringify(outcome));
        printLine(`Cancelled ${outcome.cancelled.length} task(s)${outcome.cancelled.length ? `: ${outcome.cancelled.join(', ')}` : ''}.`);
        for (const t of outcome.left) printLine(`Left ${t.taskId} as it is (${t.status}).`);
      });
    });

  program
    .command('approvals')
    .description('list the tasks waiting for a person to approve or reject their artifact (verify.approval), oldest first')
    .addOption(jsonOption('the approvals as one JSON array'))
    .action(async (opts: { json?: boolean }) => {
      const { withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const approvals = await (await batonClient(context, { startsWorkflows: false })).approvals();
        if (opts.json) return printLine(JSON.stringify(approvals));
        if (approvals.length === 0) return log('No task is awaiting approval.');
        for (const a of approvals) {
          const until = a.dueAt ? `, until ${a.dueAt} (then ${a.onTimeout})` : '';
          printLine(`${a.taskId}  revision ${a.revision.slice(0, 12)}  waiting since ${a.requestedAt}${until}  ${a.description}`);
        }
      });
    });

  for (const decision of ['approved', 'rejected'] as const) {
    const approve = decision === 'approved';
    const command = program
      .command(approve ? 'approve' : 'reject')
      .description(
        approve
          ? "approve the artifact of a task awaiting approval: recorded as its verification under your identity (BATON_ACTOR, else your login), never its agent's; its dependents are released"
          : "reject the artifact of a task awaiting approval, with a reason its agent reads: recorded as its verification under your identity; the graph's onVerificationFailure policy decides what follows",
      )
      .argument('<task>', 'task id, <graph>/<key>');
    if (approve) command.option('--reason <text>', 'why, for the event log');
    else command.requiredOption('--reason <text>', 'why, for the event log and the agent');
    command
      .addOption(jsonOption("the task's status after it and the dependents released, as one JSON object"))
      .action(async (taskId: string, opts: { reason?: string; json?: boolean }) => {
        const { operatorActor, withCliContext } = await import('./context.js');
        await withCliContext(log, { migrate: false }, async (context) => {
          // Recorded whether or not Temporal answers: the workflow is told when it does.
          const client = await batonClient(context, { startsWorkflows: false });
          const outcome = await client.decideApproval(taskId, operatorActor(), decision, opts.reason);
          if (opts.json) return printLine(JSON.stringify({ taskId, status: outcome.status, released: outcome.released }));
          printLine(`Task ${taskId} is ${outcome.status}.${outcome.released.length ? ` Released: ${outcome.released.join(', ')}.` : ''}`);
          if (!outcome.workflowTold)
            log(`Temporal did not answer: the task's workflow finds the decision at its next look (within 5 minutes).`);
        });
      });
  }

  program
    .command('proposals')
    .description(
      "list the subtasks agents proposed that wait for an operator (the graph's policy.subtasks: review), oldest first: who proposed them from which task, and each subtask",
    )
    .option('--graph <id>', "only this graph's")
    .option('--all', 'decided proposals too')
    .addOption(jsonOption('the proposals as one JSON array'))
    .action(async (opts: { graph?: string; all?: boolean; json?: boolean }) => {
      const { withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const proposals = await (await batonClient(context, { startsWorkflows: false })).proposals({ graphId: opts.graph, all: opts.all });
        if (opts.json) return printLine(JSON.stringify(proposals));
        if (proposals.length === 0) return log(opts.all ? 'No subtasks were proposed.' : 'No proposal is waiting.');
        for (const p of proposals) {
          const decided = p.status === 'pending' ? '' : `  ${p.status} by ${p.decidedBy}${p.reason ? `: ${p.reason}` : ''}`;
          printLine(`proposal ${p.id}  from ${p.taskId} (${p.proposedBy}) at ${p.proposedAt}${decided}`);
          for (const t of p.tasks)
            printLine(`  ${t.key}${t.dependsOn.length ? ` (after ${t.dependsOn.join(', ')})` : ''}  ${t.description}`);
        }
      });
    });

  const proposal = program.command('proposal').description('accept or decline subtasks an agent proposed (see `baton proposals`)');
  proposal
    .command('accept')
    .description(
      "add a proposal's subtasks to its graph under your identity (BATON_ACTOR, else your login), never the proposing agent's, and start them; each runs and is verified as its proposer is",
    )
    .argument('<proposal>', 'proposal id, as `baton proposals` lists it', parsePositiveInt)
    .option('--reason <text>', 'why, for the event log')
    .addOption(taskQueueOption('task queue of the workers that run it'))
    .addOption(jsonOption('the proposal as decided, with the added tasks, as one JSON object'))
    .action(async (id: number, opts: { reason?: string; taskQueue: string; json?: boolean }) => {
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: true, taskQueue: opts.taskQueue });
        const decided = await client.decideProposal(id, operatorActor(), true, opts.reason);
        if (opts.json) return printLine(JSON.stringify(decided));
        for (const t of decided.added) printLine(`${t.taskId}  ${t.status}`);
        log(`Accepted proposal ${decided.id}: ${decided.added.length} task(s) added to graph ${decided.graphId}.`);
      });
    });
  proposal
    .command('decline')
    .description('decline a proposal, with a reason its agent reads; nothing is added')
    .argument('<proposal>', 'proposal id, as `baton proposals` lists it', parsePositiveInt)
    .requiredOption('--reason <text>', 'why, for the event log and the agent')
    .addOption(jsonOption('the proposal as decided, as one JSON object'))
    .action(async (id: number, opts: { reason: string; json?: boolean }) => {
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: false });
        const decided = await client.decideProposal(id, operatorActor(), false, opts.reason);
        if (opts.json) return printLine(JSON.stringify(decided));
        log(`Declined proposal ${decided.id}.`);
      });
    });

  program
    .command('pool')
    .description("a pool's settings (its offers and runs: `baton api pools.list`, or the operator's page)")
    .command('limit')
    .description(
      "at most <n> of a pool's tasks run at once, across every graph; the others wait for a place as under a concurrency limit. `none` lifts it",
    )
    .argument('<pool>', 'pool name, as tasks name it in run.pool')
    .argument('<n|none>', 'how many may run at once (1 to 10000), or none', (value: string) =>
      value === 'none' ? null : parsePositiveInt(value),
    )
    .action(async (pool: string, maxRunning: number | null) => {
      const { operatorActor, withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: false });
        const now = await client.limitPool(pool, maxRunning, operatorActor());
        log(now === null ? `Pool ${pool} has no limit.` : `At most ${now} of pool ${pool}'s tasks run at once.`);
      });
    });

  const archive = program
    .command('archive')
    .description('retention: move the record of finished graphs (events, notes, tool calls) out of the live tables, and read it back');
  archive
    .command('run')
    .description(
      'archive every graph whose tasks are all verified, failed or cancelled and whose last event is older than --older-than; ' +
        'its tasks stay, its events read on with baton events, its notes and tool calls with baton archive show',
    )
    .requiredOption('--older-than <duration>', 'how long a graph has been finished, such as 30d or 12h', parseDuration)
    .option('--dry-run', 'say what would be archived, and archive nothing')
    .option('--limit <n>', 'at most this many graphs', parsePositiveInt, ARCHIVE_LIMIT_DEFAULT)
    .addOption(jsonOption('one JSON object per graph, one per line'))
    .action(async (opts: { olderThan: number; dryRun?: boolean; limit: number; json?: boolean }) => {
      const [{ operatorActor, withCliContext }, { retentionApply }] = await Promise.all([
        import('./context.js'),
        import('../db/sql/retention.js'),
      ]);
      await withCliContext(log, { migrate: false }, async (context) => {
        const dryRun = opts.dryRun ?? false;
        const moved = await retentionApply(context.pool, {
          olderThanMs: opts.olderThan,
          actor: operatorActor(),
          dryRun,
          limit: opts.limit,
        });
        for (const g of moved) {
          printLine(
            opts.json
              ? JSON.stringify(g)
              : `${g.graphId}  finished ${g.finishedAt}  ${g.events} events, ${g.notes} notes, ${g.toolCalls} tool calls`,
          );
        }
        log(`${dryRun ? 'Would archive' : 'Archived'} ${moved.length} graph(s).`);
      });
    });
  archive
    .command('show')
    .description('an archived graph: when and by whom, its notes and its tool-call ledger (its events: baton events <graph>)')
    .argument('<graph>', 'graph id')
    .addOption(jsonOption('the archive as one JSON object, with every note and tool call'))
    .action(async (graphId: string, opts: { json?: boolean }) => {
      const [{ withCliContext }, { archiveRead }] = await Promise.all([import('./context.js'), import('../db/sql/retention.js')]);
      await withCliContext(log, { migrate: false }, async (context) => {
        const archived = await archiveRead(context.pool, graphId);
        if (!archived) throw new NotFoundError(`graph ${graphId} is not archived`);
        if (opts.json) return printLine(JSON.stringify(archived));
        printLine(
          `${graphId}: archived ${archived.archivedAt} by ${archived.archivedBy}, finished ${archived.finishedAt}; ` +
            `${archived.events} events (baton events ${graphId}), ${archived.notes.length} notes, ${archived.toolCalls.length} tool calls (--json shows them)`,
        );
      });
    });

  program
    .command('status')
    .description('show the tasks of a graph, live until every task is verified, failed or blocked behind a failure')
    .argument('<graph>', 'graph id')
    .option('--no-follow', 'print once and exit')
    .addOption(jsonOption('the tasks once, one JSON object per line (implies --no-follow)'))
    .action(async (graphId: string, opts: { follow: boolean; json?: boolean }) => {
      const { withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: false });
        if (opts.json) {
          for (const t of await client.graphTasks(graphId)) printLine(JSON.stringify(t));
          return;
        }
        const allVerified = await watchGraph(client, graphId, process.stdout, { follow: opts.follow });
        if (opts.follow && !allVerified) process.exitCode = 1;
      });
    });

  program
    .command('graphs')
    .description('list graphs newest first, with their state and how many of their tasks are in each status')
    .addOption(new Option('--status <state>', 'only graphs in this state').choices(GRAPH_STATES))
    .option('--since <duration>', 'only graphs submitted within this long, such as 90m, 12h or 7d', parseDuration)
    .option('--limit <n>', 'at most this many graphs', parsePositiveInt, GRAPH_LIST_LIMIT_DEFAULT)
    .addOption(jsonOption('one JSON object per graph, one per line'))
    .action(async (opts: { status?: GraphState; since?: number; limit: number; json?: boolean }) => {
      const { withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: false });
        const graphs = await client.graphs({ state: opts.status, submittedWithinMs: opts.since, limit: opts.limit });
        if (opts.json) for (const g of graphs) printLine(JSON.stringify(g));
        else if (graphs.length) printLine(formatGraphs(graphs));
        else log('no graphs');
      });
    });

  program
    .command('events')
    .description('show the ownership timeline of a task (<graph>/<key>) or of every task of a graph')
    .argument('<task-or-graph>', 'a task id such as sdk/tests, or a graph id')
    .addOption(jsonOption('the events as JSON lines'))
    .action(async (id: string, opts: { json?: boolean }) => {
      const { withCliContext } = await import('./context.js');
      await withCliContext(log, { migrate: false }, async (context) => {
        const client = await batonClient(context, { startsWorkflows: false });
        if (isTaskId(id))
          await client.task(id); // NotFoundError names a mistyped task
        else await client.graphTasks(id);
        const events = await client.events(id);
        if (opts.json) for (const e of events) printLine(JSON.stringify(e));
        else printLine(formatEvents(events, { showSubject: !isTaskId(id) }));
      });
    });
}
