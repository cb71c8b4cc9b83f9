import { BatonError } from '../../errors.js';

/**
 * Thrown when agents cannot be isolated as configured: per-run users asked for by a worker that
 * is not root, a sandbox or `network: none` without a working bubblewrap, an agent folder another
 * user owns, or no free uid left. The worker refuses to start rather than run agents unisolated;
 * a run that meets it (no free uid) may succeed later.
 */
export class AgentIsolationUnavailableError extends BatonError {
  override readonly name = 'AgentIsolationUnavailableError';
  readonly code = 'agent_isolation_unavailable';
  override readonly retryable = true;
  constructor(readonly detail: string) {
    super(`agent isolation unavailable: ${detail}`);
  }
}
