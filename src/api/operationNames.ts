// The agent API's operation names and token scopes, apart from their input schemas, so that the
// `baton` command can name and check them without loading the schema library (src/api/operations.ts
// holds the full table and is checked against these names by the compiler).

/** Every operation of the agent API, in the order the documents list them. */
export const OPERATION_NAMES = [
  'whoami',
  'context',
  'heartbeat',
  'submit',
  'tool.call',
  'task.propose',
  'note.add',
  'notes.list',
  'pool.claim',
  'object.create',
  'object.grant',
  'object.reserve',
  'object.show',
  'object.read',
  'object.check',
  'object.log',
  'object.take',
  'object.write',
  'object.heartbeat',
  'object.release',
  'object.offer',
  'object.accept',
  'object.decline',
  'object.withdraw',
  'object.suggest',
  'object.approve',
  'inbox.wait',
  'objects.list',
  'graphs.list',
  'graph.show',
  'task.show',
  'events.list',
  'pools.list',
  'tokens.list',
  'task.cancel',
  'graph.cancel',
  'task.rerun',
  'graph.add',
  'approvals.list',
  'task.approve',
  'task.reject',
  'proposals.list',
  'proposal.accept',
  'proposal.decline',
] as const;
export type OperationName = (typeof OPERATION_NAMES)[number];

export function isOperationName(name: string): name is OperationName {
  return (OPERATION_NAMES as readonly string[]).includes(name);
}

/** The scopes a token can be given; `admin` includes every other. */
export const TOKEN_SCOPES = ['read', 'notes', 'objects', 'submit', 'view', 'approve', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** Scopes a token gets unless told otherwise. */
export const TOKEN_SCOPES_DEFAULT: readonly TokenScope[] = ['read', 'notes', 'objects'];
