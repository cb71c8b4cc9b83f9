// Registering baton's search attributes in a namespace (src/temporal/searchAttributes.ts), and
// finding out whether they are: what a worker does as it starts, and a client before it starts a graph.
import type { Client } from '@temporalio/client';
import type { Log } from '../log.js';
import { BATON_SEARCH_ATTRIBUTES } from './searchAttributes.js';

/** temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD: every attribute of baton's is a keyword. */
const KEYWORD_INDEXED_VALUE_TYPE = 2;

/** A connection's operator service, as far as this needs it (a client's or a worker's connection). */
interface OperatorServiceHolder {
  operatorService: {
    listSearchAttributes(request: { namespace: string }): Promise<{ customAttributes?: Record<string, unknown> | null }>;
    addSearchAttributes(request: { namespace: string; searchAttributes: Record<string, number> }): Promise<unknown>;
  };
}

/** The names of baton's search attributes `namespace` lacks; all of them when the server will not say. */
export async function missingSearchAttributes(connection: OperatorServiceHolder, namespace: string): Promise<string[]> {
  const names = BATON_SEARCH_ATTRIBUTES.map((a) => a.name);
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    return names.filter((name) => !customAttributes || !(name in customAttributes));
  } catch {
    return names;
  }
}

/** Whether `namespace` has every search attribute baton's workflows set. */
export async function searchAttributesRegistered(connection: OperatorServiceHolder, namespace: string): Promise<boolean> {
  return (await missingSearchAttributes(connection, namespace)).length === 0;
}

/**
 * Registers the search attributes `namespace` lacks, saying so. Where this login may not (Temporal
 * Cloud: an account's admin does it), says which command registers them and goes on: workflows then
 * run without them. Returns whether they were all there already, were added, or are still missing.
 */
export async function registerSearchAttributes(
  connection: OperatorServiceHolder,
  namespace: string,
  log: Log,
): Promise<'present' | 'added' | 'missing'> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length === 0) return 'present';
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        BATON_SEARCH_ATTRIBUTES.filter((a) => missing.includes(a.name)).map((a) => [a.name, KEYWORD_INDEXED_VALUE_TYPE]),
      ),
    });
    log(`Registered the search attributes ${missing.join(', ')} in namespace ${namespace}`);
    return 'added';
  } catch (error) {
    log(
      `baton's search attributes ${missing.join(', ')} are not registered in namespace ${namespace}, and this login may not register them ` +
        `(${error instanceof Error ? error.message : String(error)}); workflows run without them until someone runs: ` +
        missing
          .map((name) => `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type Keyword`)
          .join('; '),
    );
    return 'missing';
  }
}

/** How long a client trusts a "not registered" before asking again (someone may register them meanwhile). */
const MISSING_RECHECK_MS = 60_000;
const clientAnswers = new WeakMap<object, { registered: boolean; at: number }>();

/**
 * Whether workflows `client` starts may set baton's search attributes: asked of the server once
 * (again a minute after a no), so starting a graph costs no extra call.
 */
export async function clientHasSearchAttributes(client: Client): Promise<boolean> {
  const known = clientAnswers.get(client);
  if (known && (known.registered || Date.now() - known.at < MISSING_RECHECK_MS)) return known.registered;
  const registered = await searchAttributesRegistered(client.connection, client.options.namespace);
  clientAnswers.set(client, { registered, at: Date.now() });
  return registered;
}

/**
 * Starts a workflow through `start`, with baton's search attributes when `client`'s namespace has
 * them. A server may list them before it maps them for the namespace (a Temporal server on SQL
 * visibility, just after a worker registered them): a start refused for that is made again without
 * them, and the client asks again later.
 */
export async function startWithSearchAttributes<T>(client: Client, start: (registered: boolean) => Promise<T>): Promise<T> {
  if (!(await clientHasSearchAttributes(client))) return start(false);
  try {
    return await start(true);
  } catch (error) {
    const text = `${error instanceof Error ? error.message : ''} ${String((error as { cause?: { details?: unknown } })?.cause?.details ?? '')}`;
    if (!/search attribute/i.test(text)) throw error;
    clientAnswers.set(client, { registered: false, at: Date.now() });
    return start(false);
  }
}
