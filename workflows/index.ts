// Deterministic Temporal code only: activity *types* come from ../activities, never its code.
export * from './batonWorkflows.js';

// The workflow types of baton 0.1, for executions started under them by 0.1: they keep running
// on this code (and continue as new under the prefixed types). Workers that start from this module
// have them: baton's own, and a host's worker with the plugin and no workflows of its own (it gets
// the prebuilt bundle; only baton's own worker also registers 0.1's activity names). A host's worker
// with workflows of its own bundles batonWorkflows.ts, so its own `graphWorkflow` stays its own; so
// does one exported by a host's workflows file beside `export * from` this one (it takes precedence).
// Remove them, with withUnprefixedAliases and the unprefixed signal and query, in a release after
// deployments have had no open execution of these types (`temporal workflow list --query
// "WorkflowType IN ('graphWorkflow', 'taskWorkflow', 'healthCheckWorkflow') AND ExecutionStatus = 'Running'"`),
// and after them the paths for histories from before the patch (prefixedNames.ts).
export { batonHealthCheckWorkflow as healthCheckWorkflow } from './healthCheckWorkflow.js';
export { batonTaskWorkflow as taskWorkflow } from './taskWorkflow.js';
export { batonGraphWorkflow as graphWorkflow } from './graphWorkflow.js';
