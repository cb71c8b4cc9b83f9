import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';
import { AGENT_TOKEN_ENV, AGENT_URL_ENV } from '../api/agentServer.js';
import { cliCall, requireAgentEndpoint } from './agentCommands.js';
import { jsonOption } from './options.js';

// Exit codes of `baton tool call`, so an agent's script can tell what to do next: 0 done (result on
// stdout); otherwise the exit code of the error's code (ERROR_RESPONSES in src/errors.ts): 2 the
// call is wrong, 3 the claim is stale (stop), 4 the tool refused, 5 outcome unknown (do not repeat
// it under another step), 1 anything else.

async function paramsOf(opts: { params?: string; paramsFile?: string }): Promise<unknown> {
  if (opts.params !== undefined && opts.paramsFile !== undefined) throw new InvalidInputError('give --params or --params-file, not both');
  const text = opts.paramsFile !== undefined ? await readFile(opts.paramsFile, 'utf8') : (opts.params ?? 'null');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(`params are not JSON: ${(error as Error).message}`);
  }
}

/** `--expect key@version`, as many as given: the shared objects the call depends on (U11). */
function preconditionsOf(expect: string[] | undefined): Array<{ object: string; version: number }> | undefined {
  return expect?.map((text) => {
    const at = text.lastIndexOf('@');
    const version = Number(text.slice(at + 1));
    if (at < 1 || !/^\d+$/.test(text.slice(at + 1)) || !Number.isSafeInteger(version)) {
      throw new InvalidInputError(`--expect ${JSON.stringify(text)}: give an object and the version you read, as key@version`);
    }
    return { object: text.slice(0, at), version };
  });
}

export function registerToolCommands(program: Command, log: Log): void {
  const tool = program.command('tool').description('external side effects through the tool gateway (docs/tools.md)');

  tool
    .command('call')
    .description(
      `for agents: make an idempotency-keyed call through the endpoint the runner gave this run (${AGENT_URL_ENV}, ${AGENT_TOKEN_ENV}); ` +
        'the task and claim are bound by the run token. Prints the result as JSON. Exit 0 done, 2 bad call, 3 stale claim ' +
        'or an --expect-ed object moved (nothing sent), 4 the tool refused, 5 outcome unknown',
    )
    .argument('<tool>', 'a tool configured on the worker')
    .argument('<step>', "this call's name within the task; with the task id it is the idempotency key")
    .option('--params <json>', 'the parameters as JSON (default: null)')
    .option('--params-file <file>', 'read the parameters from a JSON file')
    .option(
      '--expect <object@version...>',
      'send only while each shared object is still at the version you read (checked as the call is marked sent)',
    )
    .action(async (toolName: string, step: string, opts: { params?: string; paramsFile?: string; expect?: string[] }) => {
      const endpoint = requireAgentEndpoint();
      const preconditions = preconditionsOf(opts.expect);
      const result = await cliCall(log, endpoint, 'tool.call', {
        tool: toolName,
        step,
        params: await paramsOf(opts),
        ...(preconditions && { preconditions }),
      });
      if (process.exitCode === undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
    });

  tool
    .command('list')
    .description('show the tool-call ledger of a task (<graph>/<key>) or of every task of a graph, from DATABASE_URL')
    .argument('<task-or-graph>', 'a task id such as sdk/tests, or a graph id')
    .addOption(jsonOption('the rows as JSON lines'))
    .action(async (id: string, opts: { json?: boolean }) => {
      const [{ withCliContext }, { toolCallRead }] = await Promise.all([import('./context.js'), import('../db/sql/reads.js')]);
      await withCliContext(log, { migrate: false, applicationName: 'baton tool' }, async ({ pool }) => {
        const rows = await toolCallRead(pool, id);
        if (opts.json) {
          for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
          return;
        }
        if (!rows.length) log(`no tool calls recorded for ${id}`);
        for (const r of rows) {
          const result = r.result === null ? (r.error ?? '') : JSON.stringify(r.result).slice(0, 80);
          process.stdout.write(
            `${r.key.padEnd(40)}  ${r.tool.padEnd(12)}  ${r.status.padEnd(20)}  sent ${String(r.attempts).padStart(2)}x  ` +
              `${r.owner}@v${r.claimVersion}  ${result}\n`,
          );
        }
      });
    });
}
