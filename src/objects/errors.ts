// Refusals of the shared-object store, one class per condition the caller handles differently.
// The store has already recorded each refusal as an event by the time one of these is thrown.
import { BatonError } from '../errors.js';
import type { ObjectRefusalCode, ObjectState } from './types.js';

/** The call the store refused and the object as it stood then. */
interface RefusedCall {
  key: string;
  actor: string;
  operation: string;
  refusal: ObjectRefusalCode;
  reason: string;
  state: ObjectState;
}

/** Base of every refusal; catch this to handle all of them alike. */
export abstract class ObjectRefusedError extends BatonError {
  readonly key: string;
  readonly actor: string;
  readonly operation: string;
  readonly refusal: ObjectRefusalCode;
  readonly reason: string;
  readonly currentHolder: string | null;
  readonly currentToken: number;
  readonly currentVersion: number;

  constructor(call: RefusedCall) {
    super(`${call.operation} of ${call.key} by ${call.actor} refused: ${call.reason}`);
    this.key = call.key;
    this.actor = call.actor;
    this.operation = call.operation;
    this.refusal = call.refusal;
    this.reason = call.reason;
    this.currentHolder = call.state.holder;
    this.currentToken = call.state.token;
    this.currentVersion = call.state.version;
  }

  override get details(): Record<string, unknown> {
    return {
      key: this.key,
      operation: this.operation,
      refusal: this.refusal,
      reason: this.reason,
      currentHolder: this.currentHolder,
      currentToken: this.currentToken,
      currentVersion: this.currentVersion,
    };
  }
}

/**
 * Thrown when a fenced call (write, heartbeat, release, offer, withdraw, approve, accept) names a
 * token or version that moved, comes from someone who does not hold the role, or approves a
 * suggestion made on an older version. Re-read, take the role again if you still should, retry.
 */
export class StaleWriteError extends ObjectRefusedError {
  override readonly name = 'StaleWriteError';
  readonly code = 'stale_write';
}

/** Thrown when the holder writes (or releases, re-offers, approves) while its own offer is open. */
export class HandoffPendingError extends ObjectRefusedError {
  override readonly name = 'HandoffPendingError';
  readonly code = 'handoff_pending';
  readonly offeredTo: string | null;
  readonly offeredVersion: number | null;

  constructor(call: RefusedCall) {
    super(call);
    this.offeredTo = call.state.offer?.to ?? null;
    this.offeredVersion = call.state.offer?.version ?? null;
  }
}

/** Thrown when the actor lacks the view, suggest or write access the call needs, or is not the one who may grant. */
export class PermissionDeniedError extends ObjectRefusedError {
  override readonly name = 'PermissionDeniedError';
  readonly code = 'permission_denied';
}

/** Thrown when accepting, declining or withdrawing an offer that is not open (any more) for the caller. */
export class NoOpenOfferError extends ObjectRefusedError {
  override readonly name = 'NoOpenOfferError';
  readonly code = 'no_open_offer';
}

/** Thrown by the check before an irreversible step when the actor's last read is not the current version. */
export class StaleViewError extends ObjectRefusedError {
  override readonly name = 'StaleViewError';
  readonly code = 'stale_view';
}

/** The typed error for a refusal the store reported. */
export function refusalError(call: RefusedCall): ObjectRefusedError {
  switch (call.refusal) {
    case 'permission':
      return new PermissionDeniedError(call);
    case 'offer_open':
      return new HandoffPendingError(call);
    case 'no_open_offer':
      return new NoOpenOfferError(call);
    case 'stale_view':
      return new StaleViewError(call);
    case 'token_moved':
    case 'not_holder':
    case 'version_moved':
    case 'suggestion_stale':
      return new StaleWriteError(call);
  }
}
