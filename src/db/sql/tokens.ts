// Bindings of src/db/functions/tokens.sql that a worker calls: the run token of a claim. The agent
// tokens an operator manages are bound in src/api.
import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { fencedWrite } from './ownerWrites.js';

/** U3, T5: stores the SHA-256 of a run token for `identity`, good only while `fence` holds. */
export function runTokenIssue(db: Queryable, fence: Fence, identity: string, secretSha256: string) {
  return fencedWrite(db, fence, 'run token', 'run_token_issue', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    identity,
    Buffer.from(secretSha256, 'hex'),
  ]);
}
