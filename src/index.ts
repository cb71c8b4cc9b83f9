// baton's public API for teams that run their own Temporal workers and clients.
export { createActivities, withUnprefixedAliases, type ActivityDeps, type BatonActivities } from '../activities/index.js';
export { createBatonClient, type BatonClient, type BatonClientOptions, type GraphOutcome } from './client.js';
export {
  createBatonWorker,
  defaultWorkerIdentity,
  workflowsPath,
  STICKY_QUEUE_TIMEOUT_MS_DEFAULT,
  ACTIVITY_TASK_POLLS_DEFAULT,
  type BatonActivityOptions,
  type BatonWorker,
  type BatonWorkerOptions,
} from './worker.js';
export { createBatonPlugin, type BatonPlugin, type BatonPluginOptions } from './batonPlugin.js';
export {
  defineFunctionGraph,
  type FunctionGraph,
  type FunctionGraphDefinition,
  type FunctionGraphInput,
  type FunctionTask,
  type GraphFunctions,
} from './functionGraph.js';
export { migrate, loadMigrations, MigrationChangedError } from './db/migrate.js';
export { createPool, BATON_PG_TYPES } from './db/pool.js';
export type { Queryable } from './db/queryable.js';
export * from './errors.js';
export { DependencyMissingError } from './dev/optionalDependency.js';
export { parseGraphSpec, type GraphSpec, type GraphPolicy, HEARTBEAT_TIMEOUT_MS_DEFAULT, MAX_ATTEMPTS_DEFAULT } from './tasks/graphSpec.js';
export { GRAPH_STATES, TASK_STATUSES, TASK_TRANSITIONS, type GraphState, type TaskStatus } from './tasks/states.js';
export type { Artifact, Claim, GraphSummary, TaskEvent, TaskRow, TaskSpec } from './tasks/types.js';
export type { GraphListFilter } from './db/sql/reads.js';
export { createCommandRunner, type CommandRunnerOptions } from './runners/commandRunner.js';
export { createCommandVerifier } from './runners/commandVerifier.js';
export { createFunctionRunner, createFunctionVerifier, type AgentFunction, type VerifierFunction } from './runners/functionRunner.js';
export { AgentFailedError, type Runner, type RunContext, type Verifier, type VerifyContext } from './runners/types.js';
export {
  agentIsolationFromEnv,
  agentIsolationStatus,
  describeAgentIsolation,
  resolveAgentIsolation,
  type AgentIsolation,
  type AgentIsolationOptions,
  type AgentIsolationStatus,
} from './runners/isolation/agentIsolation.js';
export { AgentIsolationUnavailableError } from './runners/isolation/errors.js';
export { temporalSettings, type TemporalSettings } from './temporal/connection.js';
export { graphProgressQuery } from '../workflows/definitions.js';
export { graphWorkflowId, taskWorkflowId } from './tasks/taskId.js';
export { createHttpTool, type HttpToolOptions } from './tools/httpTool.js';
export { parseHttpTools, HTTP_TOOLS_ENV } from './tools/httpToolsConfig.js';
export { createToolGateway, toolCallKey, type CallTool, type ToolGateway, type ToolGatewayOptions } from './tools/toolGateway.js';
export { ToolCallFailedError, ToolOutcomeUnknownError, UnknownToolError } from './tools/errors.js';
export type { ExecuteOutcome, Json, LookupFinding, ToolAdapter, ToolCallInput, ToolCallResult, ToolCallStatus } from './tools/types.js';
export {
  acceptObject,
  approveSuggestion,
  checkObjectView,
  createObject,
  declineObject,
  grantObjectAccess,
  heartbeatObject,
  offerObject,
  readObject,
  releaseObject,
  showObject,
  suggestObjectChange,
  sweepSilentHolders,
  takeObject,
  withdrawOffer,
  writeObject,
  type SuggestInput,
  type WriteObjectInput,
} from './objects/objectStore.js';
export { objectLog } from './objects/objectLog.js';
export {
  HandoffPendingError,
  NoOpenOfferError,
  ObjectRefusedError,
  PermissionDeniedError,
  StaleViewError,
  StaleWriteError,
} from './objects/errors.js';
export {
  OBJECT_ACCESS_LEVELS,
  type ObjectAccess,
  type ObjectContent,
  type ObjectEvent,
  type ObjectSnapshot,
  type ObjectState,
} from './objects/types.js';
export { agentEndpointFromEnv, AgentApiError, callAgentApi, type AgentEndpoint } from './api/agentClient.js';
export type { AgentApiInput } from './api/operations.js';
export type { AgentApiResult, AgentApiResults, TaskContext, TaskNote } from './api/operationResults.js';
export { OPERATION_NAMES, TOKEN_SCOPES, type OperationName, type TokenScope } from './api/operationNames.js';
export { createObjectActivities } from '../activities/objects.js';
// SPEC U6: what `baton worker` and `baton serve` are observed through, for a host's own worker (docs/observability.md).
export { createBatonMetrics, type BatonMetrics, type BatonMetricsOptions } from './observability/metrics.js';
export { startOpsServer, readinessChecks, type OpsServer, type OpsServerOptions, type ReadinessCheck } from './observability/opsServer.js';
export {
  createLogger,
  loggerLog,
  temporalLogger,
  LOG_LEVEL_ENV,
  LOG_FORMAT_ENV,
  type Logger,
  type LoggerOptions,
} from './observability/logger.js';
export { startTracing, tracingEndpoint, type Tracing } from './observability/tracing.js';
export { BATON_SEARCH_ATTRIBUTES, GRAPH_ID_ATTRIBUTE, TASK_KEY_ATTRIBUTE, TASK_STATUS_ATTRIBUTE } from './temporal/searchAttributes.js';
export { registerSearchAttributes, searchAttributesRegistered } from './temporal/registerSearchAttributes.js';
