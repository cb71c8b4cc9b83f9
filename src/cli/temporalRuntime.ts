import type { LogLevel } from '@temporalio/worker';
import { readEnv } from '../config.js';

/**
 * Installs the Temporal SDK's runtime with a logger at `BATON_LOG_LEVEL` (default WARN): the SDK
 * logs every worker state change at INFO, and a CLI user wants warnings only unless asked. Called by
 * the commands that start a worker or the dev server, before they do; loaded on use, so the other
 * commands never load the SDK's native core.
 */
export async function installTemporalRuntime(): Promise<void> {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  Runtime.install({ logger: new DefaultLogger((readEnv('BATON_LOG_LEVEL')?.toUpperCase() ?? 'WARN') as LogLevel) });
}
