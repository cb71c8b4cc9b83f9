// baton's workflows under their own (prefixed) types, and nothing else: what a host's worker with
// the baton plugin bundles beside its own workflows (withHostWorkflows.ts). baton's own worker
// bundles index.ts, which adds the types of 0.1 for executions started under them.
export { batonHealthCheckWorkflow } from './healthCheckWorkflow.js';
export { batonTaskWorkflow } from './taskWorkflow.js';
export { batonGraphWorkflow } from './graphWorkflow.js';
