// Terminology for shared objects (SPEC O1-O6):
// - shared object: a file, config, image or plan several agents write, stored under a key.
// - version: the content version, bumped by 1 on every accepted write or approved suggestion.
// - holder: the one actor allowed to write (the single-writer role); NULL when the role is free.
// - fencing token (fence): bumped by exactly 1 on every change of holder; every write names it.
// - heartbeat: the holder's proof of life; past the object's silence timeout the holder loses the role.
// - read view: the version an actor last read; a stale view is refused before irreversible steps.
// - offer (handoff): the holder names a successor and the version handed over; it reserves nothing.
// - suggestion: a proposed content from an actor with suggest access, applied only by the holder.
// - refusal: a call the rules turn down; it is recorded as an event and thrown as a typed error.

/** How long a holder may stay silent before it loses the role. (Default: 30 s) */
export const SILENCE_TIMEOUT_MS_DEFAULT = 30_000;
/** Longest silence timeout an object may have; mirrors the CHECK in 0004_objects.sql. */
export const SILENCE_TIMEOUT_MS_MAX = 7 * 24 * 60 * 60 * 1000;
/** Largest inline content; bigger things (images) are stored elsewhere and referenced. */
export const CONTENT_MAX_BYTES = 1_048_576;
/** Longest content reference (a path or URL, ideally with a digest). */
export const CONTENT_REF_MAX_CHARS = 2000;
/** Longest reason or note a caller may attach. */
export const NOTE_MAX_CHARS = 2000;
/** Longest actor identity. */
export const ACTOR_MAX_CHARS = 200;
/** Object keys: 1 to 200 characters, path-like; mirrors the CHECK in 0004_objects.sql. */
export const OBJECT_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$/;

/** Access levels per object and actor, weakest first; each includes the ones before it. */
export const OBJECT_ACCESS_LEVELS = ['none', 'view', 'suggest', 'write'] as const;
export type ObjectAccess = (typeof OBJECT_ACCESS_LEVELS)[number];

/** Why a call was refused, as the store reports it. */
const OBJECT_REFUSALS = [
  'permission',
  'token_moved',
  'not_holder',
  'version_moved',
  'offer_open',
  'no_open_offer',
  'suggestion_stale',
  'stale_view',
] as const;
export type ObjectRefusalCode = (typeof OBJECT_REFUSALS)[number];

/** Event kinds that change the holder; each carries `details.from`, `details.to` and a reason. */
export const HOLDER_CHANGE_KINDS = ['taken', 'taken_over', 'reclaimed_after_silence', 'released', 'accepted'] as const;

/** An open offer: who may take over, at which version, since when. */
interface ObjectOffer {
  to: string;
  version: number;
  offeredAt: string;
}

/** A shared object as the store reported it after a call. Times are the database's. */
export interface ObjectState {
  key: string;
  version: number;
  token: number;
  holder: string | null;
  holderSince: string | null;
  holderHeartbeatAt: string | null;
  /** The holder is past its silence timeout; the next change or sweep records the loss. */
  holderSilent: boolean;
  silenceTimeoutMs: number;
  offer: ObjectOffer | null;
  /** Database time of the call. */
  at: string;
}

/** What `readObject` returns: the state plus the content, exactly one of which is set (or neither at version 0). */
export interface ObjectSnapshot extends ObjectState {
  content: string | null;
  contentRef: string | null;
}

/** New content: inline text or a reference to where it lives. */
export type ObjectContent = { content: string; contentRef?: undefined } | { contentRef: string; content?: undefined };

/** One entry of an object's log (baton.events, subject_kind 'object'). */
export interface ObjectEvent {
  seq: number;
  kind: string;
  actor: string;
  at: string;
  fence: number | null;
  version: number | null;
  reason: string | null;
  details: Record<string, unknown>;
}
