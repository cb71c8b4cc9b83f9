// Deterministic Temporal code only: activity *types* come from ../activities, never its code.
export { healthCheckWorkflow } from './healthCheckWorkflow.js';
export { taskWorkflow } from './taskWorkflow.js';
export { graphWorkflow } from './graphWorkflow.js';
