import path from 'node:path';

/** Where baton keeps project-local state (embedded Postgres, Temporal state, tools). (Default: `./.baton`) */
export const BATON_HOME_ENV = 'BATON_HOME';
/** The name of the baton home in a project folder when BATON_HOME does not name one. */
export const BATON_HOME_DIR_NAME = '.baton';
/** Postgres connection string; when unset, baton starts an embedded Postgres. */
export const DATABASE_URL_ENV = 'DATABASE_URL';
/** Temporal frontend address, read the way Temporal's own tools read it. */
export const TEMPORAL_ADDRESS_ENV = 'TEMPORAL_ADDRESS';
/** Path to a `temporal` CLI binary to use instead of searching for one. */
export const TEMPORAL_CLI_PATH_ENV = 'TEMPORAL_CLI_PATH';
/**
 * Who the caller is when a command does not say: read by `submit` and `rerun` (else the OS user)
 * and by `object` (else `--as`). A stand-in for local use and demos: in a real deployment the
 * identity comes from the agent's own token or database role (T5).
 */
export const BATON_ACTOR_ENV = 'BATON_ACTOR';

/** How many graphs `baton graphs` (and the client's `graphs`) lists, newest first, unless told otherwise. */
export const GRAPH_LIST_LIMIT_DEFAULT = 50;
/** Task queue baton's worker polls unless told otherwise. */
export const TASK_QUEUE_DEFAULT = 'baton';
/**
 * How long `baton worker`, told to stop, lets running agents and verifications finish before it
 * hands their claims back: room for a short step to end, inside the 30 s a container platform
 * usually waits before it kills (Kubernetes' default; set Docker's `stop_grace_period` above it).
 */
export const WORKER_SHUTDOWN_GRACE_SECONDS_DEFAULT = 20;
/** Port of the embedded Postgres started by `baton dev`. */
export const DEV_POSTGRES_PORT_DEFAULT = 54329;
/**
 * gRPC port of the Temporal dev server started by `baton dev`: baton's own, not Temporal's 7233,
 * which a Temporal user's own dev server often holds already.
 */
export const DEV_TEMPORAL_PORT_DEFAULT = 17233;
/** Web UI port of the Temporal dev server started by `baton dev` (Temporal's own 8233 is left alone too). */
export const DEV_TEMPORAL_UI_PORT_DEFAULT = 18233;
/** Port of the agent API and operator's page `baton dev` serves (`baton serve` defaults to 8484). */
export const DEV_PAGE_PORT_DEFAULT = 18484;
/** Port of the /metrics, /healthz and /readyz `baton dev` serves (`baton worker` and `baton serve` only with --ops-port). */
export const DEV_OPS_PORT_DEFAULT = 18485;
/** The file in the baton home that says where a running `baton dev` is (ports, addresses, its pid; no secrets). */
export const DEV_STACK_STATE_FILE_NAME = 'dev-stack.json';
/** Database baton creates in the embedded Postgres. */
export const DEV_DATABASE_NAME = 'baton';
/** Folder in the baton home for generated secrets (mode 0700; each file 0600, its owner's only). */
export const CREDENTIALS_DIR_NAME = 'credentials';
/** How long to wait for a server to become ready; 2-core machines need far more than the SDK's 5 s. */
export const SERVER_READY_TIMEOUT_MS_DEFAULT = 60_000;

/** The project-local state folder, absolute. */
export function batonHome(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env[BATON_HOME_ENV] ?? BATON_HOME_DIR_NAME);
}

/** Reads a non-empty environment variable, or undefined. */
export function readEnv(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}
