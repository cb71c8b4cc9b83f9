// The agent API with the operator's page, as `baton serve` and `baton dev` start it: the page at
// /ui/, linking workflows to the Temporal UI when one is known, and the operator's actions carried
// out through the Temporal server of the deployment (refused when it names none).
import type { Queryable } from '../db/queryable.js';
import type { Log } from '../log.js';
import type { ApiCallObserver } from '../api/httpHandler.js';
import type { RateLimit } from '../api/rateLimiter.js';
import type { CliContext } from './context.js';

export interface OperatorServerOptions {
  host: string;
  port: number;
  rateLimit: RateLimit;
  maxBodyBytes: number;
  /** The task queue a rerun's workflow is started on. */
  taskQueue: string;
  /** The Temporal Web UI to link workflows to. (Default: the dev stack's, when there is one) */
  temporalUiUrl?: string;
  /** Serve the page at /ui/. */
  page: boolean;
  /** Told of every call answered, for the metrics. (Default: none) */
  observe?: ApiCallObserver;
}

/** Starts the server on `db` (a baton_agent login); its URL, the page's, and how to stop it. */
export async function startOperatorServer(context: CliContext, db: Queryable, options: OperatorServerOptions, log: Log) {
  const [{ createAgentApi }, { startAgentServer }, { loadOperatorPage, OPERATOR_PAGE_PATH }, { workflowControl }] = await Promise.all([
    import('../api/agentApi.js'),
    import('../api/agentServer.js'),
    import('../api/operatorPage.js'),
    import('../workflowControl.js'),
  ]);
  const temporalUiUrl = options.temporalUiUrl ?? context.temporalUiUrl;
  const page = options.page
    ? await loadOperatorPage(temporalUiUrl ? { temporalUi: { url: temporalUiUrl, namespace: context.temporalSettings.namespace } } : {})
    : undefined;
  const api = createAgentApi({
    db,
    maxBodyBytes: options.maxBodyBytes,
    rateLimit: options.rateLimit,
    log,
    page,
    observe: options.observe,
    // Dialled on the first cancel or rerun: a server that only answers reads never needs Temporal.
    workflows: context.temporalSettings.connectionOptions.address
      ? async () => workflowControl(await context.temporal(), options.taskQueue)
      : undefined,
  });
  const server = await startAgentServer(api, { host: options.host, port: options.port });
  return {
    url: server.url,
    pageUrl: page ? `${server.url}${OPERATOR_PAGE_PATH}` : undefined,
    close: async () => {
      await server.close();
      await api.close();
    },
  };
}

/** How long the token `baton dev` prints for its page lasts. */
const DEV_PAGE_TOKEN_LIFETIME_MS = 24 * 3_600_000;

/**
 * `baton dev`'s agent API and page, on the embedded stack's agent login, with a fresh admin token
 * for the operator (24 h, revoked when the stack stops) in the printed address's fragment, which
 * the browser never sends to a server. On a stack without the embedded logins (DATABASE_URL given) it says how to run `baton serve`.
 */
export async function startDevPage(
  context: CliContext,
  port: number,
  log: Log,
  observe?: ApiCallObserver,
): Promise<{ close(): Promise<void> } | undefined> {
  if (!context.componentUrls) {
    log("The operator's page: run `baton serve` with a baton_agent login (this stack's database is DATABASE_URL's).");
    return undefined;
  }
  const [{ createPool }, { agentTokenCreate, agentTokenRevoke }, { operatorActor }, { TASK_QUEUE_DEFAULT }] = await Promise.all([
    import('../db/pool.js'),
    import('../api/tokens.js'),
    import('./context.js'),
    import('../config.js'),
  ]);
  const actor = operatorActor();
  const client = createPool(context.componentUrls.client, { max: 1, applicationName: 'baton dev' });
  const { secret, token } = await agentTokenCreate(client, {
    identity: actor,
    scopes: ['admin'],
    expiresInMs: DEV_PAGE_TOKEN_LIFETIME_MS,
    createdBy: actor,
  }).catch(async (error: unknown) => {
    await client.end();
    throw error;
  });
  const pool = createPool(context.componentUrls.agent, { max: 4, applicationName: 'baton dev: agent API' });
  const { MAX_BODY_BYTES_DEFAULT, RATE_LIMIT_DEFAULT } = await import('../api/limits.js');
  const server = await startOperatorServer(
    context,
    pool,
    {
      host: '127.0.0.1',
      port,
      rateLimit: RATE_LIMIT_DEFAULT,
      maxBodyBytes: MAX_BODY_BYTES_DEFAULT,
      taskQueue: TASK_QUEUE_DEFAULT,
      page: true,
      observe,
    },
    log,
  ).catch(async (error: unknown) => {
    await pool.end();
    await client.end();
    throw error;
  });
  log(`Agent API: ${server.url} (POST /v1/<operation>, MCP at /mcp)`);
  log(`Operator's page: ${server.pageUrl}#token=${secret}  (an admin token for ${actor}, valid 24 h; keep the address to yourself)`);
  return {
    close: async () => {
      await server.close();
      await pool.end();
      // The address printed stops working with the stack that printed it.
      await agentTokenRevoke(client, { id: token.id, actor, reason: 'baton dev stopped' }).catch((error: unknown) =>
        log(
          `the page's token ${token.id} could not be revoked (it expires in 24 h): ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
      await client.end();
    },
  };
}
