import type { Command } from 'commander';
import {
  agentEndpointFromEnv,
  AgentApiError,
  callAgentApi,
  HttpRequestError,
  listAgentTools,
  type AgentEndpoint,
} from '../api/agentClient.js';
import { AGENT_TOKEN_ENV, AGENT_URL_ENV } from '../api/agentServer.js';
import { MAX_BODY_BYTES_DEFAULT, RATE_LIMIT_DEFAULT } from '../api/limits.js';
import { isOperationName, OPERATION_NAMES, TOKEN_SCOPES, TOKEN_SCOPES_DEFAULT, type OperationName } from '../api/operationNames.js';
import type { AgentApiInput } from '../api/operations.js';
import type { NoteGrants, TokenInfo } from '../api/tokens.js';
import { errorResponseOf, InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';
import { jsonOption, parsePort, parsePositiveInt, taskQueueOption, untilSignal } from './options.js';
import { parseLifetime, parseScopes } from './tokenOptions.js';
import { opsHostOption, opsPortOption, type OpsFlags } from './observe.js';

/** Port `baton serve` listens on unless told otherwise. */
const SERVE_PORT_DEFAULT = 8484;
/** How long a CLI call of the API may take; a pool claim adds its own wait. */
const API_CALL_TIMEOUT_MS = 600_000;
/** How long `baton mcp` waits for the endpoint's list of the token's tools. */
const TOOL_LIST_TIMEOUT_MS = 30_000;

/** The agent API endpoint from the environment, or an error that says how to get one. */
export function requireAgentEndpoint(): AgentEndpoint {
  const endpoint = agentEndpointFromEnv();
  if (!endpoint) {
    throw new Error(
      `${AGENT_URL_ENV} and ${AGENT_TOKEN_ENV} are not set: inside a run the runner sets them; elsewhere point them at \`baton serve\` with a token from \`baton token create\``,
    );
  }
  return endpoint;
}

/**
 * Performs one operation for the CLI and prints its result as JSON. A refusal is logged with its
 * code and sets the exit code of that code (2 the call is wrong, 3 the claim or role moved, 4 the
 * tool refused, 5 outcome unknown); an endpoint where nothing answers throws
 * AgentApiUnreachableError (exit 1), and an answer cut off exits 5: the call may have been performed.
 */
export async function cliCall(log: Log, endpoint: AgentEndpoint, operation: string, input: unknown): Promise<unknown> {
  if (!isOperationName(operation))
    throw new InvalidInputError(`no operation ${operation}; the operations are ${OPERATION_NAMES.join(', ')}`);
  try {
    // Relayed as the user gave it: the server checks it against the operation's schema.
    return await callAgentApi(endpoint, operation, input as AgentApiInput<OperationName>, API_CALL_TIMEOUT_MS);
  } catch (error) {
    if (error instanceof AgentApiError) {
      log(`baton: ${operation} refused (${error.code}): ${error.detail}`);
      process.exitCode = errorResponseOf(error.code).exitCode;
    } else if (error instanceof HttpRequestError) {
      log(
        `baton: no complete answer from the baton agent API at ${endpoint.url} (${error.code}): ${error.message}; ${operation} may have been performed`,
      );
      process.exitCode = errorResponseOf('tool_outcome_unknown').exitCode;
    } else {
      throw error;
    }
    return undefined;
  }
}

/** Collects a repeatable option's values. */
const collect = (value: string, previous: string[]) => [...previous, value];

/** `notes of graph g1; task g2/t only`, or `notes of every task` for a token without grants. */
function describeNoteGrants(grants: NoteGrants | null): string {
  if (!grants) return 'notes of every task';
  const parts = [
    grants.graphs.length ? `graph ${grants.graphs.join(', ')}` : '',
    grants.tasks.length ? `task ${grants.tasks.join(', ')}` : '',
  ];
  return `notes of ${parts.filter(Boolean).join('; ')} only`;
}

/** What a token may reach, in words: its note grants and (U11) its pools. */
function describeReach(t: Pick<TokenInfo, 'noteGrants' | 'pools'>): string {
  return `${describeNoteGrants(t.noteGrants)}, ${t.pools ? `work from pool ${t.pools.join(', ')} only` : 'work from any pool'}`;
}

/** Adds `baton serve`, `baton token ...`, `baton api` and `baton mcp`: the agents' door (docs/agents.md). */
export function registerAgentCommands(program: Command, log: Log): void {
  program
    .command('serve')
    .description(
      'serve the agent API for agents and people outside runs: HTTP (POST /v1/<operation>), MCP (Streamable HTTP at /mcp), ' +
        "/openapi.json and the operator's page at /ui/, authenticated by bearer tokens from `baton token create` (the page: a view " +
        'token, or an admin one to cancel and rerun); connects to Postgres as a member of baton_agent (DATABASE_URL, else baton ' +
        "dev's agent login) and, for cancel and rerun, to the workers' Temporal server (TEMPORAL_* settings, else baton dev's)",
    )
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on', parsePort, SERVE_PORT_DEFAULT)
    .option('--rate <calls>', 'calls per second one token may make on average', parsePositiveInt, RATE_LIMIT_DEFAULT.perSecond)
    .option('--burst <calls>', 'calls one token may make at once', parsePositiveInt, RATE_LIMIT_DEFAULT.burst)
    .option('--max-body <bytes>', 'largest request body read', parsePositiveInt, MAX_BODY_BYTES_DEFAULT)
    .option('--temporal-ui <url>', "the Temporal Web UI the page links workflows to (default: baton dev's, else none)")
    .addOption(taskQueueOption('task queue a rerun from the page starts its workflow on'))
    .option('--no-page', "do not serve the operator's page")
    .addOption(opsPortOption())
    .addOption(opsHostOption())
    .action(
      async (
        opts: {
          host: string;
          port: number;
          rate: number;
          burst: number;
          maxBody: number;
          temporalUi?: string;
          taskQueue: string;
          page: boolean;
        } & OpsFlags,
      ) => {
        const [{ withCliContext }, { startOperatorServer }, { observeProcess }, { readinessChecks }] = await Promise.all([
          import('./context.js'),
          import('./operatorServer.js'),
          import('./observe.js'),
          import('../observability/opsServer.js'),
        ]);
        const observed = await observeProcess('serve', opts, { temporalRuntime: false });
        const log = observed.log;
        await withCliContext(
          log,
          { migrate: false, login: 'agent', requireRole: 'baton_agent', applicationName: 'baton serve', poolSize: 10 },
          async (context) => {
            const server = await startOperatorServer(
              context,
              context.pool,
              {
                host: opts.host,
                port: opts.port,
                rateLimit: { perSecond: opts.rate, burst: opts.burst },
                maxBodyBytes: opts.maxBody,
                taskQueue: opts.taskQueue,
                temporalUiUrl: opts.temporalUi,
                page: opts.page,
                observe: observed.metrics.apiCalls,
              },
              log,
            );
            const stopOps = await observed
              .serveOps({
                // The deployment's metrics: serve is the one exporter a deployment usually has.
                deployment: context.pool,
                readiness: readinessChecks(
                  context.pool,
                  context.temporalSettings.connectionOptions.address ? () => context.temporal({ connect: false }) : undefined,
                ),
              })
              .catch(async (error: unknown) => {
                await server.close();
                throw error;
              });
            log(
              `baton agent API on ${server.url}: POST /v1/<operation>, MCP at ${server.url}/mcp, OpenAPI at ${server.url}/openapi.json` +
                `${server.pageUrl ? `, the operator's page at ${server.pageUrl}` : ''}. Press Ctrl-C to stop.`,
            );
            await untilSignal();
            await stopOps();
            await server.close();
          },
        );
        await observed.close();
      },
    );

  const token = program.command('token').description('tokens of the agent API: each carries the identity every call made with it acts as');
  token
    .command('create <identity>')
    .description('issue a token for <identity>; prints the secret once on stdout (only its SHA-256 is stored)')
    .option(
      '--scope <scopes>',
      `comma-separated: ${TOKEN_SCOPES.join(', ')} (view: the operator's page, and includes read; admin includes every other)`,
      TOKEN_SCOPES_DEFAULT.join(','),
    )
    .option('--expires <lifetime>', 'lifetime such as 90m, 12h or 30d (default: never expires; revoke it)')
    .option('--graph <id>', "grant the notes of this graph's tasks (repeatable)", collect, [])
    .option(
      '--task <id>',
      "grant the notes of this task (repeatable). With --graph or --task the token reads and writes those notes and no others; with neither, every task's (an operator's token)",
      collect,
      [],
    )
    .option('--pool <name>', 'let it take work (pool.claim) from this pool (repeatable); with none, from any pool', collect, [])
    .addOption(jsonOption('the token and its secret as one JSON object'))
    .action(
      async (
        identity: string,
        opts: { scope: string; expires?: string; graph: string[]; task: string[]; pool: string[]; json?: boolean },
      ) => {
        const scopes = parseScopes(opts.scope);
        const expiresInMs = opts.expires === undefined ? undefined : parseLifetime(opts.expires);
        const noteGrants = opts.graph.length || opts.task.length ? { graphs: opts.graph, tasks: opts.task } : undefined;
        const [{ operatorActor, withCliContext }, { agentTokenCreate }] = await Promise.all([
          import('./context.js'),
          import('../api/tokens.js'),
        ]);
        await withCliContext(log, { migrate: false, applicationName: 'baton token' }, async ({ pool }) => {
          const { secret, token: t } = await agentTokenCreate(pool, {
            identity,
            scopes,
            expiresInMs,
            createdBy: operatorActor(),
            noteGrants,
            ...(opts.pool.length && { pools: opts.pool }),
          });
          log(
            `token ${t.id} for ${t.identity}, scopes ${t.scopes.join(', ')}, ${t.expiresAt ? `expires ${t.expiresAt}` : 'never expires'}, ` +
              `${describeReach(t)}. The secret is shown once:`,
          );
          process.stdout.write(opts.json ? `${JSON.stringify({ ...t, secret })}\n` : `${secret}\n`);
        });
      },
    );
  token
    .command('list')
    .description('list tokens (never their secrets) with their note grants and pools')
    .addOption(jsonOption('one JSON token per line'))
    .action(async (opts: { json?: boolean }) => {
      const [{ withCliContext }, { agentTokenList }] = await Promise.all([import('./context.js'), import('../api/tokens.js')]);
      await withCliContext(log, { migrate: false, applicationName: 'baton token' }, async ({ pool }) => {
        for (const t of await agentTokenList(pool)) {
          const state = t.revokedAt ? `revoked ${t.revokedAt} by ${t.revokedBy}` : t.expiresAt ? `expires ${t.expiresAt}` : 'active';
          process.stdout.write(
            opts.json
              ? `${JSON.stringify(t)}\n`
              : `${t.id}  ${t.identity.padEnd(20)}  ${t.scopes.join(',').padEnd(24)}  ${state}  last used ${t.lastUsedAt ?? 'never'}  ${describeReach(t)}\n`,
          );
        }
      });
    });
  token
    .command('revoke <id>')
    .description('revoke a token at once: every later call with it is refused (and recorded)')
    .option('--reason <text>', 'why (recorded)')
    .action(async (id: string, opts: { reason?: string }) => {
      const [{ operatorActor, withCliContext }, { agentTokenRevoke }] = await Promise.all([
        import('./context.js'),
        import('../api/tokens.js'),
      ]);
      await withCliContext(log, { migrate: false, applicationName: 'baton token' }, async ({ pool }) => {
        const t = await agentTokenRevoke(pool, { id, actor: operatorActor(), reason: opts.reason });
        log(`token ${t.id} of ${t.identity} revoked at ${t.revokedAt} by ${t.revokedBy}`);
      });
    });

  program
    .command('api <operation> [input]')
    .description(
      `for agents: perform one agent API operation (${OPERATION_NAMES.join(', ')}) with ${AGENT_URL_ENV} and ${AGENT_TOKEN_ENV}; ` +
        '<input> is a JSON object (default {}). Prints the result as JSON. Exit 2 bad call or refused, 3 claim or role moved',
    )
    .action(async (operation: string, input: string | undefined) => {
      let parsed: unknown = {};
      try {
        parsed = input === undefined ? {} : JSON.parse(input);
      } catch (error) {
        throw new InvalidInputError(`the input is not JSON: ${(error as Error).message}`);
      }
      const result = await cliCall(log, requireAgentEndpoint(), operation, parsed);
      if (process.exitCode === undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
    });

  program
    .command('mcp')
    .description(
      `for MCP clients: an MCP server on stdin/stdout whose tools are the agent API, reached with ${AGENT_URL_ENV} and ${AGENT_TOKEN_ENV} (a run's .mcp.json starts it)`,
    )
    .action(async () => {
      const endpoint = requireAgentEndpoint();
      const [{ StdioServerTransport }, { createMcpServer, operationOfTool }] = await Promise.all([
        import('@modelcontextprotocol/sdk/server/stdio.js'),
        import('../api/agentMcp.js'),
      ]);
      // stdout carries the protocol; failures are logged on stderr. The endpoint decides which
      // tools the token sees: its own tools/list, relayed.
      const server = createMcpServer(
        (operation, input) => callAgentApi(endpoint, operation, input as AgentApiInput<OperationName>, API_CALL_TIMEOUT_MS),
        {
          operations: async () => (await listAgentTools(endpoint, TOOL_LIST_TIMEOUT_MS)).flatMap((name) => operationOfTool(name) ?? []),
          log,
        },
      );
      const closed = new Promise<void>((resolve) => (server.onclose = resolve));
      await server.connect(new StdioServerTransport());
      await closed;
    });
}
