// SPEC U6: a long-running baton process's own port for its operators' systems: Prometheus scrapes
// /metrics, an orchestrator probes /healthz (the process answers) and /readyz (what it depends on
// answers: Postgres with the schema this baton needs, Temporal). Apart from the agent API, so a
// deployment can keep it on a private network.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queryable } from '../db/queryable.js';
import type { BatonMetrics } from './metrics.js';

/** A dependency's check: resolves when it is ready, throws saying why not. */
export type ReadinessCheck = () => Promise<void>;

/** How long one readiness check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 5_000;

export interface OpsServerOptions {
  host: string;
  port: number;
  metrics: BatonMetrics;
  /** What /readyz checks, by name (postgres, temporal). */
  readiness: Record<string, ReadinessCheck>;
}

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(`${JSON.stringify(body)}\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return json(405, { error: `${req.method} ${path}: use GET` });
    }
    if (path === '/healthz') return json(200, { ok: true });
    if (path === '/readyz') {
      void readiness(options.readiness).then((checks) => {
        const ok = Object.values(checks).every((c) => c.ok);
        json(ok ? 200 : 503, { ok, checks });
      });
      return;
    }
    if (path === '/metrics') {
      void options.metrics.scrape().then(
        (text) => res.writeHead(200, { 'content-type': options.metrics.registry.contentType }).end(text),
        (error: unknown) => json(500, { error: `metrics could not be gathered: ${String(error)}` }),
      );
      return;
    }
    json(404, { error: `no route ${path}: GET /metrics, /healthz or /readyz` });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs every check at once; each is ready or says why not. */
async function readiness(checks: Record<string, ReadinessCheck>): Promise<Record<string, { ok: boolean; error?: string }>> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS / 1000} s`)), CHECK_TIMEOUT_MS);
      });
      try {
        await Promise.race([check(), timeout]);
        return [name, { ok: true }] as const;
      } catch (error) {
        return [name, { ok: false, error: error instanceof Error ? error.message : String(error) }] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return Object.fromEntries(results);
}

/** A Temporal connection, as far as readiness needs one: its workflow service answers. */
interface TemporalReachable {
  workflowService: { getSystemInfo(request: object): Promise<unknown> };
}

/**
 * What /readyz checks: Postgres answers and holds the schema this baton needs; the Temporal server
 * answers, when the process uses one (`temporal` gives its connection, dialled on first use).
 */
export function readinessChecks(
  db: Queryable,
  temporal?: TemporalReachable | (() => Promise<TemporalReachable>),
): Record<string, ReadinessCheck> {
  return {
    postgres: async () => (await import('../db/migrate.js')).requireMigrated(db),
    ...(temporal && {
      temporal: async () => {
        await (typeof temporal === 'function' ? await temporal() : temporal).workflowService.getSystemInfo({});
      },
    }),
  };
}
