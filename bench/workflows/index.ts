// The bench's own workflow bundle; baton's workflows/ stays free of benchmark code.
export { bareWorkflow } from './bareWorkflow.js';
