// An in-memory model of one shared object: what the store should answer to each call and which
// events it should append. The model-based test runs the same calls against Postgres and this
// model and compares. Kept deliberately naive (no SQL, no clock): silence is a flag set by the
// `expire` step, which the test mirrors by moving the holder's heartbeat into the past.
import type { ObjectAccess, ObjectRefusalCode } from '../../src/objects/types.js';

export const MODEL_ACCESS: Record<string, ObjectAccess> = { A: 'write', B: 'write', C: 'write', S: 'suggest', V: 'view' };
export const MODEL_ACTORS = Object.keys(MODEL_ACCESS);

const RANK: Record<ObjectAccess, number> = { none: 0, view: 1, suggest: 2, write: 3 };
const may = (actor: string, access: ObjectAccess) => RANK[MODEL_ACCESS[actor] ?? 'none'] >= RANK[access];

export interface ObjectModel {
  version: number;
  token: number;
  holder: string | null;
  /** The holder's last heartbeat is past the silence timeout. */
  silent: boolean;
  offer: { giver: string; to: string; version: number } | null;
  content: string | null;
  /** The version each actor last read (or wrote). */
  reads: Map<string, number>;
  /** The token each actor last obtained; what it names when it acts on its own knowledge. */
  tokens: Map<string, number>;
  suggestions: { base: number; content: string; approved: boolean }[];
}

export function initialModel(): ObjectModel {
  return {
    version: 0,
    token: 0,
    holder: null,
    silent: false,
    offer: null,
    content: null,
    reads: new Map(),
    tokens: new Map(),
    suggestions: [],
  };
}

/**
 * What a caller names: the version it last read (`ownVersion`) or the current one, and the token
 * it last obtained (`ownToken`) or the current one. An agent acting on what it knows, or one
 * that just looked; mixing them reaches, e.g., a holder writing on a stale read.
 */
export interface Knows {
  ownVersion: boolean;
  ownToken: boolean;
}

/** One call. Actors may be named by role (see HOLDER etc.), resolved when the step runs. */
export type ModelOp =
  | { op: 'read' | 'take' | 'decline' | 'checkView'; actor: string }
  | ({ op: 'write' | 'heartbeat' | 'withdraw' | 'release' | 'accept' | 'suggest'; actor: string } & Knows)
  | ({ op: 'offer'; actor: string; successor: string } & Knows)
  | ({ op: 'approve'; actor: string; pick: number } & Knows)
  | { op: 'expire' };

/** `illegal`: a well-formed call the object's state refuses outright (409), with nothing recorded. */
export type Expected = { ok: true } | { refusal: ObjectRefusalCode } | { illegal: true };

export interface Step {
  /** The arguments the real call gets. */
  args: { actor: string; successor: string; version: number; token: number; suggestion: number; content: string };
  expected: Expected;
  /** Kinds of the events the call must append, in order. */
  events: string[];
}

let contentCounter = 0;

/**
 * Actors named by role, resolved when the step runs: the holder, the offer's successor and a
 * third writer act far more often than a random pick would make them, which drives runs into
 * deep states (offers answered, overtaken, accepted by writing).
 */
export const HOLDER = '@holder';
export const SUCCESSOR = '@successor';
/** A writer who is neither the holder nor the successor. */
export const THIRD = '@third';
/** As a successor: a writer other than the holder and the one offering. */
export const OTHER_WRITER = '@other';

const writerExcept = (...names: (string | null | undefined)[]) =>
  MODEL_ACTORS.find((a) => MODEL_ACCESS[a] === 'write' && !names.includes(a))!;

function resolveActor(m: ObjectModel, actor: string, caller?: string): string {
  switch (actor) {
    case HOLDER:
      return m.holder ?? 'A';
    case SUCCESSOR:
      return m.offer?.to ?? writerExcept(m.holder);
    case THIRD:
      return writerExcept(m.holder, m.offer?.to);
    case OTHER_WRITER:
      return writerExcept(m.holder, caller);
    default:
      return actor;
  }
}

export function step(m: ObjectModel, o: ModelOp): Step {
  const ownVersion = 'ownVersion' in o && o.ownVersion;
  const ownToken = 'ownToken' in o && o.ownToken;
  const actor = 'actor' in o ? resolveActor(m, o.actor) : '';
  const args = {
    actor,
    successor: o.op === 'offer' ? resolveActor(m, o.successor, actor) : '',
    version: ownVersion ? (m.reads.get(actor) ?? 0) : o.op === 'accept' && m.offer ? m.offer.version : m.version,
    token: ownToken ? (m.tokens.get(actor) ?? 0) : m.token,
    suggestion: o.op === 'approve' ? o.pick % Math.max(1, m.suggestions.length) : 0,
    content: `${actor}:${++contentCounter}`,
  };
  const events: string[] = [];
  const done = (expected: Expected): Step => ({ args, expected, events });
  const refuse = (refusal: ObjectRefusalCode, kind: string) => (events.push(kind), done({ refusal }));
  const moveRole = (kind: string, to: string | null) => {
    events.push(kind);
    m.holder = to;
    m.token += 1;
    m.silent = false;
    if (to) m.tokens.set(to, m.token);
  };
  const expireIfSilent = () => {
    if (m.holder !== null && m.silent && m.offer === null) moveRole('reclaimed_after_silence', null);
  };
  // The token the call's checks see; accepting by writing swaps in the new one (args keep the old).
  let token = args.token;
  const holds = () => m.holder === actor && token === m.token;
  const refuseUnlessHolder = () => (holds() ? undefined : refuse(token === m.token ? 'not_holder' : 'token_moved', 'stale_write_refused'));
  const accept = () => {
    m.offer = null;
    moveRole('accepted', actor);
  };

  switch (o.op) {
    case 'expire':
      if (m.holder !== null) m.silent = true;
      return done({ ok: true });
    case 'read':
      if (!may(actor, 'view')) return refuse('permission', 'permission_refused');
      m.reads.set(actor, m.version);
      return done({ ok: true });
    case 'checkView':
      if (!may(actor, 'view')) return refuse('permission', 'permission_refused');
      return m.reads.get(actor) === m.version ? done({ ok: true }) : refuse('stale_view', 'stale_view_refused');
    case 'take': {
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      if (m.offer?.to === actor) return (accept(), done({ ok: true }));
      if (m.holder === actor && m.offer) return refuse('offer_open', 'handoff_pending_refused');
      if (m.holder === actor && !m.silent) return (m.tokens.set(actor, m.token), done({ ok: true }));
      const overtaking = m.offer !== null;
      if (overtaking) events.push('overtaken');
      m.offer = null;
      moveRole(m.holder === null ? 'taken' : m.silent && !overtaking ? 'reclaimed_after_silence' : 'taken_over', actor);
      return done({ ok: true });
    }
    case 'write': {
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      if (m.offer?.to === actor && args.token === m.token) {
        if (args.version !== m.version) return refuse('version_moved', 'stale_write_refused');
        accept();
        token = m.token;
      }
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      if (m.offer) return refuse('offer_open', 'handoff_pending_refused');
      if (args.version !== m.version) return refuse('version_moved', 'stale_write_refused');
      m.version += 1;
      m.content = args.content;
      m.silent = false;
      m.reads.set(actor, m.version);
      events.push('written');
      return done({ ok: true });
    }
    case 'heartbeat': {
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      m.silent = false;
      return done({ ok: true });
    }
    case 'release': {
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      if (m.offer) return refuse('offer_open', 'handoff_pending_refused');
      moveRole('released', null);
      return done({ ok: true });
    }
    case 'offer': {
      if (args.successor === actor || !may(args.successor, 'write')) return done({ illegal: true });
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      if (m.offer) return refuse('offer_open', 'handoff_pending_refused');
      if (args.version !== m.version) return refuse('version_moved', 'stale_write_refused');
      m.offer = { giver: actor, to: args.successor, version: m.version };
      m.silent = false;
      events.push('offered');
      return done({ ok: true });
    }
    case 'accept':
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      if (m.offer?.to !== actor) return refuse('no_open_offer', 'no_open_offer_refused');
      if (args.version !== m.offer.version) return refuse('version_moved', 'stale_write_refused');
      accept();
      return done({ ok: true });
    case 'decline':
      expireIfSilent();
      if (m.offer?.to !== actor) return refuse('no_open_offer', 'no_open_offer_refused');
      m.offer = null;
      m.silent = false;
      events.push('declined');
      return done({ ok: true });
    case 'withdraw': {
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      if (!m.offer) return refuse('no_open_offer', 'no_open_offer_refused');
      m.offer = null;
      m.silent = false;
      events.push('withdrawn');
      return done({ ok: true });
    }
    case 'suggest':
      expireIfSilent();
      if (!may(actor, 'suggest')) return refuse('permission', 'permission_refused');
      m.suggestions.push({ base: args.version, content: args.content, approved: false });
      events.push('suggested');
      return done({ ok: true });
    case 'approve': {
      const s = m.suggestions[args.suggestion]!;
      expireIfSilent();
      if (!may(actor, 'write')) return refuse('permission', 'permission_refused');
      const stale = refuseUnlessHolder();
      if (stale) return stale;
      if (m.offer) return refuse('offer_open', 'handoff_pending_refused');
      if (s.approved || s.base !== m.version) return refuse('suggestion_stale', 'stale_write_refused');
      s.approved = true;
      m.version += 1;
      m.content = s.content;
      m.silent = false;
      m.reads.set(actor, m.version);
      events.push('suggestion_approved');
      return done({ ok: true });
    }
  }
}
