import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { BATON_ACTOR_ENV, DATABASE_URL_ENV } from '../config.js';
import type { Queryable } from '../db/queryable.js';
import { InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';
import { OBJECT_ACCESS_LEVELS, type ObjectAccess, type ObjectContent, type ObjectEvent, type ObjectState } from '../objects/types.js';
import { agentEndpointFromEnv } from '../api/agentClient.js';
import { AGENT_TOKEN_ENV, AGENT_URL_ENV } from '../api/agentServer.js';
import type { OperationName } from '../api/operationNames.js';
import { cliCall } from './agentCommands.js';
import { jsonOption, parseNonNegativeInt } from './options.js';

/** The object store's calls, loaded only by a command that goes through the database. */
type ObjectStore = typeof import('../objects/objectStore.js') & typeof import('../objects/objectLog.js');

async function loadObjectStore(): Promise<ObjectStore> {
  const [store, log] = await Promise.all([import('../objects/objectStore.js'), import('../objects/objectLog.js')]);
  return { ...store, ...log };
}

interface ActorOptions {
  as?: string;
  json?: boolean;
}

interface ContentOptions {
  content?: string;
  file?: string;
  ref?: string;
}

async function contentOf(opts: ContentOptions): Promise<ObjectContent> {
  const given = [opts.content, opts.file, opts.ref].filter((v) => v !== undefined).length;
  if (given !== 1) throw new InvalidInputError('give exactly one of --content, --file and --ref');
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
    .description(
      `shared objects: take the single-writer role, compare-and-swap writes, hand over (through the agent API with $${AGENT_URL_ENV} and $${AGENT_TOKEN_ENV}; ` +
        `else on ${DATABASE_URL_ENV}, or the database of a running baton dev, as --as)`,
    );

  // Every object command prints what it did on stdout: as text, or with --json as JSON.
  const leaf = (name: string, description: string, json = "the object's state as one JSON object") =>
    object
      .command(name)
      .description(description)
      .addOption(jsonOption(json))
      .option(
        '--as <actor>',
        `administrators with database credentials only: act as this identity (default: $${BATON_ACTOR_ENV}); agents use $${AGENT_URL_ENV} and $${AGENT_TOKEN_ENV}, and the token decides`,
      );
  const withContent = (cmd: Command) =>
    cmd
      .option('--content <text>', 'inline content')
      .option('--file <path>', 'inline content read from a UTF-8 file')
      .option('--ref <uri>', 'a reference to content stored elsewhere (a path or URL, ideally with a digest)');
  // With BATON_URL and BATON_TOKEN, every verb goes through the agent API and the token decides who
  // acts; otherwise through the database as `--as` (an administrator's own database credentials).
  // The actor first, so a missing one is named before any connection; object commands only ever
  // use a migrated database, never change its schema.
  const perform = async <T>(
    opts: ActorOptions,
    operation: OperationName,
    input: Record<string, unknown>,
    viaDatabase: (db: Queryable, actor: string, store: ObjectStore) => Promise<T>,
  ): Promise<T | undefined> => {
    const endpoint = agentEndpointFromEnv();
    if (endpoint) {
      if (opts.as !== undefined)
        throw new InvalidInputError(
          `--as is for administrators on the database; with ${AGENT_TOKEN_ENV} set, the token decides who you are`,
        );
      return (await cliCall(log, endpoint, operation, input)) as T | undefined;
    }
    const [{ declaredActor, withCliContext }, store] = await Promise.all([import('./context.js'), loadObjectStore()]);
    const actor = declaredActor(opts.as);
    return withCliContext(log, { migrate: false, applicationName: 'baton object' }, ({ pool }) => viaDatabase(pool, actor, store));
  };
  const state = (s: ObjectState | undefined, opts: { json?: boolean }) => {
    if (s && opts.json) process.stdout.write(`${JSON.stringify(s)}\n`);
    else if (s) for (const line of describeState(s)) process.stdout.write(`${line}\n`);
  };

  withContent(leaf('create <key>', 'create a shared object (you get write access and administer its grants)'))
    .option('--silence-timeout <ms>', 'how long a holder may stay silent before losing the role', parseNonNegativeInt)
    .addOption(new Option('--default-access <access>', 'access for everyone without a grant').choices(OBJECT_ACCESS_LEVELS).default('none'))
    .action(async (key: string, opts: ActorOptions & ContentOptions & { silenceTimeout?: number; defaultAccess: ObjectAccess }) => {
      const hasContent = [opts.content, opts.file, opts.ref].some((v) => v !== undefined);
      const input = {
        key,
        ...(hasContent ? await contentOf(opts) : {}),
        silenceTimeoutMs: opts.silenceTimeout,
        defaultAccess: opts.defaultAccess,
      };
      state(await perform(opts, 'object.create', input, (db, actor, store) => store.createObject(db, actor, input)), opts);
    });

  leaf('grant <key> <grantee> <access>', `set an actor's access (${OBJECT_ACCESS_LEVELS.join(', ')}); only the creator may`).action(
    async (key: string, grantee: string, access: string, opts: ActorOptions) => {
      const input = { key, grantee, access: access as ObjectAccess };
      state(await perform(opts, 'object.grant', input, (db, actor, store) => store.grantObjectAccess(db, actor, input)), opts);
    },
  );

  leaf(
    'reserve <key> [paths...]',
    'reserve repository paths or globs (src/api/**) with an object you created, replacing those it reserved (none frees them): a run whose commit changes one fails unless its agent holds the object',
  ).action(async (key: string, paths: string[], opts: ActorOptions) => {
    const input = { key, paths };
    state(await perform(opts, 'object.reserve', input, (db, actor, store) => store.reserveObjectPaths(db, actor, input)), opts);
  });

  leaf('show <key>', 'show version, token, holder and any open offer').action(async (key: string, opts: ActorOptions) =>
    state(await perform(opts, 'object.show', { key }, (db, actor, store) => store.showObject(db, actor, { key })), opts),
  );

  leaf(
    'read <key>',
    'print the content (or its reference) on stdout and record that you read this version',
    "the object's state, its content included, as one JSON object",
  ).action(async (key: string, opts: ActorOptions) => {
    const s = await perform(opts, 'object.read', { key }, (db, actor, store) => store.readObject(db, actor, { key }));
    if (!s) return;
    state(s, opts);
    if (opts.json) return;
    if (s.content !== null) process.stdout.write(s.content);
    else if (s.contentRef !== null) process.stdout.write(`${s.contentRef}\n`);
  });

  leaf('take <key>', 'take the single-writer role now, from whoever holds it; prints your token')
    .option('--reason <text>', 'why you take it (recorded)')
    .action(async (key: string, opts: ActorOptions & { reason?: string }) => {
      const input = { key, reason: opts.reason };
      state(await perform(opts, 'object.take', input, (db, actor, store) => store.takeObject(db, actor, input)), opts);
    });

  withContent(leaf('write <key>', 'compare-and-swap write naming the version you read and your token'))
    .requiredOption('--version <n>', 'the version you read', parseNonNegativeInt)
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action(async (key: string, opts: ActorOptions & ContentOptions & { version: number; token: number }) => {
      const input = { key, version: opts.version, token: opts.token, ...(await contentOf(opts)) };
      state(await perform(opts, 'object.write', input, (db, actor, store) => store.writeObject(db, actor, input)), opts);
    });

  leaf('heartbeat <key>', 'tell the store you (the holder) are alive')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action(async (key: string, opts: ActorOptions & { token: number }) => {
      const input = { key, token: opts.token };
      state(await perform(opts, 'object.heartbeat', input, (db, actor, store) => store.heartbeatObject(db, actor, input)), opts);
    });

  leaf('release <key>', 'give the role up')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .option('--reason <text>', 'why (recorded)')
    .action(async (key: string, opts: ActorOptions & { token: number; reason?: string }) => {
      const input = { key, token: opts.token, reason: opts.reason };
      state(await perform(opts, 'object.release', input, (db, actor, store) => store.releaseObject(db, actor, input)), opts);
    });

  leaf('offer <key> <successor>', 'offer the role to a successor at the current version; your writes are refused while it is open')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .requiredOption('--version <n>', 'the version you hand over', parseNonNegativeInt)
    .action(async (key: string, successor: string, opts: ActorOptions & { token: number; version: number }) => {
      const input = { key, successor, token: opts.token, version: opts.version };
      state(await perform(opts, 'object.offer', input, (db, actor, store) => store.offerObject(db, actor, input)), opts);
    });

  leaf('accept <key>', 'accept the offer made to you and become the holder')
    .requiredOption('--version <n>', 'the version offered', parseNonNegativeInt)
    .action(async (key: string, opts: ActorOptions & { version: number }) => {
      const input = { key, version: opts.version };
      state(await perform(opts, 'object.accept', input, (db, actor, store) => store.acceptObject(db, actor, input)), opts);
    });

  leaf('decline <key>', 'decline the offer made to you')
    .option('--reason <text>', 'why (recorded)')
    .action(async (key: string, opts: ActorOptions & { reason?: string }) => {
      const input = { key, reason: opts.reason };
      state(await perform(opts, 'object.decline', input, (db, actor, store) => store.declineObject(db, actor, input)), opts);
    });

  leaf('withdraw <key>', 'withdraw your open offer')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action(async (key: string, opts: ActorOptions & { token: number }) => {
      const input = { key, token: opts.token };
      state(await perform(opts, 'object.withdraw', input, (db, actor, store) => store.withdrawOffer(db, actor, input)), opts);
    });

  withContent(
    leaf('suggest <key>', 'propose new content; the holder decides', "the suggestion's id and the object's state as one JSON object"),
  )
    .requiredOption('--base-version <n>', 'the version your suggestion is based on', parseNonNegativeInt)
    .option('--note <text>', 'a note for the holder')
    .action(async (key: string, opts: ActorOptions & ContentOptions & { baseVersion: number; note?: string }) => {
      const input = { key, baseVersion: opts.baseVersion, note: opts.note, ...(await contentOf(opts)) };
      const suggested = await perform(opts, 'object.suggest', input, (db, actor, store) => store.suggestObjectChange(db, actor, input));
      if (!suggested) return;
      if (opts.json) return void process.stdout.write(`${JSON.stringify(suggested)}\n`);
      process.stdout.write(`suggestion ${suggested.suggestionId}\n`);
      state(suggested.state, opts);
    });

  leaf('approve <key> <suggestion-id>', 'apply a suggestion made on the current version (holder only)')
    .requiredOption('--token <n>', 'your fencing token', parseNonNegativeInt)
    .action(async (key: string, suggestionId: string, opts: ActorOptions & { token: number }) => {
      const input = { key, token: opts.token, suggestionId: parseNonNegativeInt(suggestionId) };
      state(await perform(opts, 'object.approve', input, (db, actor, store) => store.approveSuggestion(db, actor, input)), opts);
    });

  leaf('check <key>', 'refuse (non-zero exit) unless the version you last read is current; run it before an irreversible step').action(
    async (key: string, opts: ActorOptions) =>
      state(await perform(opts, 'object.check', { key }, (db, actor, store) => store.checkObjectView(db, actor, { key })), opts),
  );

  leaf(
    'sweep',
    'administrators: record the loss of the role for every holder silent past its timeout (on the database); running workers do it every second',
    'each holder reclaimed as one JSON object per line',
  ).action(async (opts: ActorOptions) => {
    const [{ declaredActor, withCliContext }, store] = await Promise.all([import('./context.js'), loadObjectStore()]);
    await withCliContext(log, { migrate: false, applicationName: 'baton object' }, async ({ pool }) => {
      const swept = await store.sweepSilentHolders(pool, declaredActor(opts.as));
      for (const s of swept) {
        process.stdout.write(
          opts.json
            ? `${JSON.stringify(s)}\n`
            : `${s.key}: ${s.silentHolder} lost the role (reclaimed after silence), token now ${s.token}\n`,
        );
      }
      log(`${swept.length} silent holder(s) reclaimed`);
    });
  });

  leaf('log <key>', "print the object's event log, oldest first", 'one JSON event per line').action(
    async (key: string, opts: ActorOptions) => {
      const events = await perform(opts, 'object.log', { key }, (db, actor, store) => store.objectLog(db, actor, { key }));
      for (const e of events ?? []) process.stdout.write(`${opts.json ? JSON.stringify(e) : describeEvent(e)}\n`);
    },
  );
}
