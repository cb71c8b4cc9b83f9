import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { DATABASE_URL_ENV } from '../config.js';
import type { Queryable } from '../db/queryable.js';
import type { Log } from '../log.js';
import { objectLog } from '../objects/objectLog.js';
import * as store from '../objects/objectStore.js';
import { OBJECT_ACCESS_LEVELS, type ObjectAccess, type ObjectContent, type ObjectEvent, type ObjectState } from '../objects/types.js';
import { BATON_ACTOR_ENV, declaredActor, withCliContext } from './context.js';
import { jsonOption, parseNonNegativeInt } from './options.js';

interface ActorOptions {
  as?: string;
}

interface ContentOptions {
  content?: string;
  file?: string;
  ref?: string;
}

async function contentOf(opts: ContentOptions): Promise<ObjectContent> {
  const given = [opts.content, opts.file, opts.ref].filter((v) => v !== undefined).length;
  if (given !== 1) throw new Error('give exactly one of --content, --file and --ref');
  if (opts.ref !== undefined) return { contentRef: opts.ref };
  return { content: opts.content ?? (await readFile(opts.file!, 'utf8')) };
}

function describeState(s: ObjectState): string[] {
  const lines = [`${s.key}: version ${s.version}, token ${s.token}`];
  lines.push(
    s.holder === null
      ? '  holder: none'
      : `  holder: ${s.holder} since ${s.holderSince}, last heartbeat ${s.holderHeartbeatAt}` +
          ` (silence timeout ${s.silenceTimeoutMs} ms${s.holderSilent ? '; SILENT: the next change or sweep reclaims it' : ''})`,
  );
  if (s.offer) lines.push(`  open offer: to ${s.offer.to} at version ${s.offer.version} since ${s.offer.offeredAt}`);
  return lines;
}

function describeEvent(e: ObjectEvent): string {
  const fence = e.fence === null ? '' : `token ${e.fence}`;
  const version = e.version === null ? '' : `v${e.version}`;
  return [String(e.seq).padStart(3), e.at, e.kind.padEnd(24), e.actor.padEnd(10), fence.padEnd(9), version.padEnd(5), e.reason ?? '']
    .join('  ')
    .trimEnd();
}

/**
 * Adds `baton object ...`: show, read, take, write, heartbeat, release, offer, accept, decline,
 * withdraw, suggest, approve, check, grant, create, sweep and log, against DATABASE_URL.
 * A refusal exits non-zero with its reason; the refusal is already in the object's log.
 */
export function registerObjectCommands(program: Command, log: Log): void {
  const object = program
    .command('object')
    .description(`shared objects: take the single-writer role, compare-and-swap writes, hand over (uses ${DATABASE_URL_ENV}, else the database of a running baton dev)`);

  const leaf = (name: string, description: string) =>
    object
      .command(name)
      .description(description)
      .option('--as <actor>', `act as this identity (default: $${BATON_ACTOR_ENV})`);
  const withContent = (cmd: Command) =>
    cmd
      .option('--content <text>', 'inline content')
      .option('--file <path>', 'inline content read from a UTF-8 file')
      .option('--ref <uri>', 'a reference to content stored elsewhere (a path or URL, ideally with a digest)');
  const state = (s: ObjectState) => describeState(s).forEach((line) => log(line));
  // The actor first, so a missing one is named before any connection; object commands only
  // ever use a migrated database, never change its schema.
  const withDatabase = async <T>(opts: ActorOptions, fn: (db: Queryable, actor: string) => Promise<T>): Promise<T> => {
    const actor = declaredActor(opts.as);
    return withCliContext(log, { migrate: false, applicationName: 'baton object' }, ({ pool }) => fn(pool, actor));
  };

  withContent(leaf('create <key>', 'create a shared object (you get write access and administer its grants)'))
    .option('--silence-timeout <ms>', 'how long a holder may stay silent before losing the role', parseNonNegativeInt)
    .addOption(new Option('--default-access <access>', 'access for everyone without a grant').choices(OBJECT_ACCESS_LEVELS).default('none'))
    .action((key: string, opts: ActorOptions & ContentOptions & { silenceTimeout?: number; defaultAccess: ObjectAccess }) =>
      withDatabase(opts, async (db, actor) => {
        const hasContent = [opts.content, opts.file, opts.ref].some((v) => v !== undefined);
        const initial = hasContent ? await contentOf(opts) : {};
        const { silenceTimeout: silenceTimeoutMs, defaultAccess } = opts;
        state(await store.createObject(db, actor, { key, ...initial, silenceTimeoutMs, defaultAccess }));
      }),
    );

  leaf('grant <key> <grantee> <access>', `set an actor's access (${OBJECT_ACCESS_LEVELS.join(', ')}); only the creator may`).action(
    (key: string, grantee: string, access: string, opts: ActorOptions) =>
      withDatabase(opts, async (db, actor) =>
        state(await store.grantObjectAccess(db, actor, { key, grantee, access: access as ObjectAccess })),
      ),
  );

  leaf('show <key>', 'show version, token, holder and any open offer')
    .addOption(jsonOption('the state as JSON on stdout'))
    .action((key: string, opts: ActorOptions & { json?: boolean }) =>
      withDatabase(opts, async (db, actor) => {
        const s = await store.showObject(db, actor, { key });
        if (opts.json) process.stdout.write(`${JSON.stringify(s)}\n`);
        else state(s);
      }),
    );

  leaf('read <key>', 'print the content (or its reference) on stdout and record that you read this version').action(
    (key: string, opts: ActorOptions) =>
      withDatabase(opts, async (db, actor) => {
        const s = await store.readObject(db, actor, { key });
        state(s);
        if (s.content !== null) process.stdout.write(s.content);
        else if (s.contentRef !== null) process.stdout.write(`${s.contentRef}\n`);
      }),
  );

  leaf('take <key>', 'take the single-writer role now, from whoever holds it; prints your token')
    .option('--reason <text>', 'why you take it (recorded)')
    .action((key: string, opts: ActorOptions & { reason?: string }) =>
      withDatabase(opts, async (db, actor) => state(await store.takeObject(db, actor, { key, reason: opts.reason }))),
    );

  withContent(leaf('write <key>', 'compare-and-swap write naming the version you read and your token'))
    .requiredOption('--version <n>', 'the version you read', parseNonNegativeInt)
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action((key: string, opts: ActorOptions & ContentOptions & { version: number; token: number }) =>
      withDatabase(opts, async (db, actor) =>
        state(await store.writeObject(db, actor, { key, version: opts.version, token: opts.token, ...(await contentOf(opts)) })),
      ),
    );

  leaf('heartbeat <key>', 'tell the store you (the holder) are alive')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action((key: string, opts: ActorOptions & { token: number }) =>
      withDatabase(opts, async (db, actor) => state(await store.heartbeatObject(db, actor, { key, token: opts.token }))),
    );

  leaf('release <key>', 'give the role up')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .option('--reason <text>', 'why (recorded)')
    .action((key: string, opts: ActorOptions & { token: number; reason?: string }) =>
      withDatabase(opts, async (db, actor) => state(await store.releaseObject(db, actor, { key, token: opts.token, reason: opts.reason }))),
    );

  leaf('offer <key> <successor>', 'offer the role to a successor at the current version; your writes are refused while it is open')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .requiredOption('--version <n>', 'the version you hand over', parseNonNegativeInt)
    .action((key: string, successor: string, opts: ActorOptions & { token: number; version: number }) =>
      withDatabase(opts, async (db, actor) =>
        state(await store.offerObject(db, actor, { key, successor, token: opts.token, version: opts.version })),
      ),
    );

  leaf('accept <key>', 'accept the offer made to you and become the holder')
    .requiredOption('--version <n>', 'the version offered', parseNonNegativeInt)
    .action((key: string, opts: ActorOptions & { version: number }) =>
      withDatabase(opts, async (db, actor) => state(await store.acceptObject(db, actor, { key, version: opts.version }))),
    );

  leaf('decline <key>', 'decline the offer made to you')
    .option('--reason <text>', 'why (recorded)')
    .action((key: string, opts: ActorOptions & { reason?: string }) =>
      withDatabase(opts, async (db, actor) => state(await store.declineObject(db, actor, { key, reason: opts.reason }))),
    );

  leaf('withdraw <key>', 'withdraw your open offer')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action((key: string, opts: ActorOptions & { token: number }) =>
      withDatabase(opts, async (db, actor) => state(await store.withdrawOffer(db, actor, { key, token: opts.token }))),
    );

  withContent(leaf('suggest <key>', 'propose new content; the holder decides'))
    .requiredOption('--base-version <n>', 'the version your suggestion is based on', parseNonNegativeInt)
    .option('--note <text>', 'a note for the holder')
    .action((key: string, opts: ActorOptions & ContentOptions & { baseVersion: number; note?: string }) =>
      withDatabase(opts, async (db, actor) => {
        const { suggestionId, state: s } = await store.suggestObjectChange(db, actor, {
          key, baseVersion: opts.baseVersion, note: opts.note, ...(await contentOf(opts)),
        });
        log(`suggestion ${suggestionId}`);
        state(s);
      }),
    );

  leaf('approve <key> <suggestion-id>', 'apply a suggestion made on the current version (holder only)')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action((key: string, suggestionId: string, opts: ActorOptions & { token: number }) =>
      withDatabase(opts, async (db, actor) =>
        state(await store.approveSuggestion(db, actor, { key, token: opts.token, suggestionId: parseNonNegativeInt(suggestionId) })),
      ),
    );

  leaf('check <key>', 'refuse (exit 1) unless the version you last read is current; run it before an irreversible step').action(
    (key: string, opts: ActorOptions) => withDatabase(opts, async (db, actor) => state(await store.checkObjectView(db, actor, { key }))),
  );

  leaf('sweep', 'record the loss of the role for every holder silent past its timeout').action((opts: ActorOptions) =>
    withDatabase(opts, async (db, actor) => {
      const swept = await store.sweepSilentHolders(db, actor);
      for (const s of swept) log(`${s.key}: ${s.silentHolder} lost the role (reclaimed after silence), token now ${s.token}`);
      log(`${swept.length} silent holder(s) reclaimed`);
    }),
  );

  leaf('log <key>', "print the object's event log, oldest first")
    .addOption(jsonOption('one JSON event per line on stdout'))
    .action((key: string, opts: ActorOptions & { json?: boolean }) =>
      withDatabase(opts, async (db, actor) => {
        for (const e of await objectLog(db, actor, { key })) {
          process.stdout.write(`${opts.json ? JSON.stringify(e) : describeEvent(e)}\n`);
        }
      }),
    );
}
