import { Connection, type ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';

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
export function connectClient(settings: TemporalSettings): Promise<Connection> {
  return Connection.connect(settings.connectionOptions as ConnectionOptions);
}

/** A native connection for workers. */
export function connectWorker(settings: TemporalSettings): Promise<NativeConnection> {
  return NativeConnection.connect(settings.connectionOptions);
}
