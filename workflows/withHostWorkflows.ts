// The workflow code of a host's worker that has workflows of its own beside baton's plugin
// (src/batonPlugin.ts): Temporal bundles one module per worker, so the plugin points the bundler
// here and aliases the module name below to the host's own workflowsPath. Only baton's prefixed
// types: the host's own `graphWorkflow` (a type of baton 0.1) is the host's.
// @ts-expect-error resolved only by the bundler's alias (HOST_WORKFLOWS_MODULE), never by TypeScript
export * from '__baton_host_workflows__';
export * from './batonWorkflows.js';
