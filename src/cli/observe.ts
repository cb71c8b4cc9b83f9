// What a long-running command (worker, serve, dev) is observed through, set up before it connects
// to anything (SPEC U6): its structured logger, tracing when the environment asks for it, the
// Temporal SDK's runtime on the same logger, and, with --ops-port, the port with /metrics,
// /healthz and /readyz.
import { Option } from 'commander';
import type { Queryable } from '../db/queryable.js';
import { InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';
import type { Logger } from '../observability/logger.js';
import type { BatonMetrics } from '../observability/metrics.js';
import type { ReadinessCheck } from '../observability/opsServer.js';
import type { Tracing } from '../observability/tracing.js';
import { parsePort } from './options.js';

export const opsPortOption = (defaultPort?: number) =>
  new Option(
    '--ops-port <port>',
    `serve /metrics (Prometheus), /healthz and /readyz on this port${defaultPort === undefined ? ' (default: none)' : ''}; 0 picks a free one`,
  )
    .argParser(parsePort)
    .default(defaultPort);
export const opsHostOption = () => new Option('--ops-host <address>', 'address the --ops-port listens on').default('127.0.0.1');

export interface OpsFlags {
  opsPort?: number;
  opsHost: string;
}

export interface ObservedProcess {
  logger: Logger;
  /** Progress lines, as info records of `logger`. */
  log: Log;
  tracing?: Tracing;
  metrics: BatonMetrics;
  /**
   * Starts the ops port when --ops-port asked for it: the deployment metrics read from `deployment`'s
   * event log when given, and /readyz running `readiness`. Returns how to stop it.
   */
  serveOps(options: { deployment?: Queryable; readiness: Record<string, ReadinessCheck> }): Promise<() => Promise<void>>;
  /** Stops what the process was observed through (flushes buffered spans). */
  close(): Promise<void>;
}

/**
 * Sets up the observation of `component` (`worker`, `serve`, `dev`); with `temporalRuntime`, installs
 * the Temporal SDK's runtime (a process that runs a worker), with its metrics when there is an ops port.
 */
export async function observeProcess(
  component: string,
  flags: OpsFlags,
  options: {
    temporalRuntime: boolean;
    /** Fields every record carries, such as the worker's identity. */ fields?: Record<string, unknown>;
  },
): Promise<ObservedProcess> {
  const [{ createLogger, loggerLog }, { createBatonMetrics }, { startTracing }] = await Promise.all([
    import('../observability/logger.js'),
    import('../observability/metrics.js'),
    import('../observability/tracing.js'),
  ]);
  const logger = createLogger({ base: { component, ...options.fields } });
  const log = loggerLog(logger);
  // Node's own warnings (an idle Postgres connection lost, a deprecation) are records too, not loose lines.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => logger.warn({ warning: warning.name }, warning.message));
  const tracing = await startTracing(component, log);
  const runtime = options.temporalRuntime
    ? await (await import('./temporalRuntime.js')).installTemporalRuntime(logger, { metrics: flags.opsPort !== undefined })
    : {};
  const metrics = createBatonMetrics({ temporalRuntimeUrl: runtime.metricsUrl, log: (line) => logger.warn(line) });
  return {
    logger,
    log,
    tracing,
    metrics,
    async serveOps({ deployment, readiness }) {
      if (flags.opsPort === undefined) return async () => {};
      if (deployment) metrics.exportDeployment(deployment);
      const { startOpsServer } = await import('../observability/opsServer.js');
      const server = await startOpsServer({ host: flags.opsHost, port: flags.opsPort, metrics, readiness }).catch(
        (error: NodeJS.ErrnoException) => {
          throw error.code === 'EADDRINUSE'
            ? new InvalidInputError(`--ops-port ${flags.opsPort}: another process listens on ${flags.opsHost}:${flags.opsPort}`)
            : error;
        },
      );
      log(`Metrics: ${server.url}/metrics; health: ${server.url}/healthz, ${server.url}/readyz`);
      return () => server.close();
    },
    close: async () => {
      await tracing?.shutdown();
      logger.flush();
    },
  };
}
