import type { Logger } from '../observability/logger.js';

/**
 * Installs the Temporal SDK's runtime with its records going to `logger` (default: a new one; the SDK's native core's
 * too, at WARN and above), and with `metrics`, its Prometheus exporter on a free loopback port,
 * whose address it returns (a process's /metrics serves them with baton's). Called by the commands
 * that start a worker or the dev server, before they do; loaded on use, so the other commands never
 * load the SDK's native core.
 */
export async function installTemporalRuntime(logger?: Logger, options: { metrics?: boolean } = {}): Promise<{ metricsUrl?: string }> {
  const [{ Runtime, makeTelemetryFilterString }, { createLogger, temporalLogger }, { freePort }] = await Promise.all([
    import('@temporalio/worker'),
    import('../observability/logger.js'),
    import('../dev/freePort.js'),
  ]);
  const port = options.metrics ? await freePort() : undefined;
  Runtime.install({
    logger: temporalLogger(logger ?? createLogger()),
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN' }) },
      ...(port ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } } : {}),
    },
  });
  return { metricsUrl: port ? `http://127.0.0.1:${port}/metrics` : undefined };
}
