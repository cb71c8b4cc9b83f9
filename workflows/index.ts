// Deterministic Temporal code only: activity *types* come from ../activities, never its code.
export * from './batonWorkflows.js';

// The workflow types of baton 0.1, for executions started under them by 0.1: they keep running
// on this code (and continue as new under the prefixed types). Only baton's own worker has them:
// a host's worker with the plugin bundles batonWorkflows.ts, so its own `graphWorkflow` stays its own. A host's own workflow of one of these
// names, exported by its workflows file beside `export * from` this one, takes precedence over it.
// Remove them, with withUnprefixedAliases and the unprefixed signal and query, in a release after
// deployments have had no open execution of these types (`temporal workflow list --query
// "WorkflowType IN ('graphWorkflow', 'taskWorkflow', 'healthCheckWorkflow') AND ExecutionStatus = 'Running'"`),
// and after them the paths for histories from before the patch (prefixedNames.ts).
export { batonHealthCheckWorkflow as healthCheckWorkflow } from './healthCheckWorkflow.js';
export { batonTaskWorkflow as taskWorkflow } from './taskWorkflow.js';
export { batonGraphWorkflow as graphWorkflow } from './graphWorkflow.js';
