// The SDK's client and worker packages are imported when a connection is made, not with this
// module: reading the settings must not cost a command that only reads Postgres their load time.
import type { Connection, ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnection, NativeConnectionOptions } from '@temporalio/worker';

export interface TemporalSettings {
  connectionOptions: NativeConnectionOptions;
  namespace: string;
}

/**
 * Reads Temporal connection settings the way Temporal's own CLI and SDKs do: the active profile
 * of `temporal.toml`, overridden by `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`,
 * `TEMPORAL_TLS*` variables. `overrides.address` (e.g. from the embedded dev stack) wins.
 */
export function temporalSettings(overrides: { address?: string; namespace?: string } = {}): TemporalSettings {
  const config = loadClientConnectConfig();
  return {
    connectionOptions: { ...config.connectionOptions, ...(overrides.address ? { address: overrides.address } : {}) },
    namespace: overrides.namespace ?? config.namespace ?? 'default',
  };
}

/** A client connection for starting workflows and reading their results. */
export async function connectClient(settings: TemporalSettings): Promise<Connection> {
  const { Connection } = await import('@temporalio/client');
  return Connection.connect(settings.connectionOptions as ConnectionOptions);
}

/** A native connection for workers. */
export async function connectWorker(settings: TemporalSettings): Promise<NativeConnection> {
  const { NativeConnection } = await import('@temporalio/worker');
  return NativeConnection.connect(settings.connectionOptions);
}
