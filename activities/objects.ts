import type { Queryable } from '../src/db/queryable.js';
import { InvalidInputError } from '../src/errors.js';
import { objectLog } from '../src/objects/objectLog.js';
import * as store from '../src/objects/objectStore.js';
import type { ObjectEvent, ObjectState } from '../src/objects/types.js';
import { withActivityFailures } from './failures.js';

/** Largest inline content an activity accepts; bigger content travels as a reference (S3). */
const ACTIVITY_INLINE_CONTENT_MAX_BYTES = 64 * 1024;

interface ObjectActivityDeps {
  db: Queryable;
  /** This worker's identity: the actor of every object call it makes (T5). Never taken from input. */
  actor: string;
}

/** What the read activity returns: the state and a content reference; inline content stays in Postgres (S3). */
type ObjectReadResult = ObjectState & { contentRef: string | null; hasInlineContent: boolean };

/**
 * Shared-object activities, so workflows can take, write and hand over objects. Refusals become
 * non-retryable ApplicationFailures (failures.ts) whose `type` is the error class name (StaleWriteError,
 * HandoffPendingError, PermissionDeniedError, NoOpenOfferError, StaleViewError) and whose
 * details carry the reason and the object's current holder, token and version.
 */
export function createObjectActivities(deps: ObjectActivityDeps) {
  const { db, actor } = deps;
  return withActivityFailures({
    async batonTakeObject(input: { key: string; reason?: string }): Promise<ObjectState> {
      return store.takeObject(db, actor, input);
    },
    /** Records that this worker read the current version (O4). */
    async batonReadObject(input: { key: string }): Promise<ObjectReadResult> {
      const { content, contentRef, ...state } = await store.readObject(db, actor, input);
      return { ...state, contentRef, hasInlineContent: content !== null };
    },
    async batonWriteObject(input: store.WriteObjectInput): Promise<ObjectState> {
      checkInlineSize(input);
      return store.writeObject(db, actor, input);
    },
    async batonHeartbeatObject(input: { key: string; token: number }): Promise<ObjectState> {
      return store.heartbeatObject(db, actor, input);
    },
    async batonReleaseObject(input: { key: string; token: number; reason?: string }): Promise<ObjectState> {
      return store.releaseObject(db, actor, input);
    },
    async batonOfferObject(input: { key: string; token: number; version: number; successor: string }): Promise<ObjectState> {
      return store.offerObject(db, actor, input);
    },
    async batonAcceptObject(input: { key: string; version: number }): Promise<ObjectState> {
      return store.acceptObject(db, actor, input);
    },
    async batonDeclineObject(input: { key: string; reason?: string }): Promise<ObjectState> {
      return store.declineObject(db, actor, input);
    },
    async batonWithdrawOffer(input: { key: string; token: number }): Promise<ObjectState> {
      return store.withdrawOffer(db, actor, input);
    },
    async batonSuggestObjectChange(input: store.SuggestInput): Promise<{ suggestionId: number; state: ObjectState }> {
      checkInlineSize(input);
      return store.suggestObjectChange(db, actor, input);
    },
    async batonApproveSuggestion(input: { key: string; token: number; suggestionId: number }): Promise<ObjectState> {
      return store.approveSuggestion(db, actor, input);
    },
    /** The check before an irreversible step (O4); fails with StaleViewError on a stale view. */
    async batonCheckObjectView(input: { key: string }): Promise<ObjectState> {
      return store.checkObjectView(db, actor, input);
    },
    async batonObjectLog(input: { key: string; afterSeq?: number; limit?: number }): Promise<ObjectEvent[]> {
      return objectLog(db, actor, input);
    },
  });
}

function checkInlineSize(input: { content?: string | undefined }): void {
  if (input.content !== undefined && Buffer.byteLength(input.content, 'utf8') > ACTIVITY_INLINE_CONTENT_MAX_BYTES) {
    throw new InvalidInputError(`inline content over ${ACTIVITY_INLINE_CONTENT_MAX_BYTES} bytes; store it elsewhere and pass contentRef`);
  }
}
