// The OpenAPI 3.1 document of the agent API's HTTP side, from the operation table: each operation's
// JSON Schema is the one MCP publishes too, and a body is required wherever a field is.
import { mcpToolName } from './agentMcp.js';
import type { OperationName } from './operationNames.js';
import { OPERATIONS, operationJsonSchema, STORABLE_JSON_DEF } from './operations.js';
import { REQUEST_ID_HEADER } from './problems.js';

/** The document, made on its first request: it depends on nothing but the operation table. */
let document: Record<string, unknown> | undefined;

/** The OpenAPI 3.1 document of the HTTP API. */
export function openApiDocument(): Record<string, unknown> {
  return (document ??= makeOpenApiDocument());
}

function makeOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const requestId = { [REQUEST_ID_HEADER]: { description: 'the id the server logs the request under', schema: { type: 'string' } } };
  const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
  // Refusals that say when to call again: their Retry-After header is always sent (problems.ts).
  const callAgainLater = (description: string) => ({
    description: `${description}; call again after Retry-After seconds`,
    headers: {
      ...requestId,
      'retry-after': { description: 'seconds to wait before calling again', required: true, schema: { type: 'integer' } },
    },
    content: problem,
  });
  for (const name of Object.keys(OPERATIONS) as OperationName[]) {
    const operation = OPERATIONS[name];
    const schema = openApiSchema(operationJsonSchema(name));
    paths[`/v1/${name}`] = {
      post: {
        operationId: mcpToolName(name),
        summary: operation.description,
        description: `Needs ${operation.scope === 'run' ? 'a run token' : `a token with scope ${operation.scope} (or admin)`}. The actor is the token's identity.`,
        security: [{ bearer: [] }],
        // An empty body is taken as {}: optional only where no field is required.
        requestBody: { required: (schema.required ?? []).length > 0, content: { 'application/json': { schema } } },
        responses: {
          '200': { description: 'done', headers: requestId, content: { 'application/json': {} } },
          '429': callAgainLater(
            'rate_limited: this token, or this client address, made calls faster than its limit, or the address presented too many refused tokens',
          ),
          '503': callAgainLater('store_unavailable: the server cannot reach PostgreSQL, its store'),
          default: { description: 'refused or failed', headers: requestId, content: problem },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'baton agent API',
      version: '1',
      description: 'docs/agents.md. Every call is made as the identity of its bearer token.',
    },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        // The JSON values some operations take: an operation's own $defs, kept here once.
        [STORABLE_JSON_DEF]: openApiSchema(operationJsonSchema('heartbeat').$defs as Record<string, unknown>)[STORABLE_JSON_DEF],
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'code', 'detail'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            code: { type: 'string' },
            detail: { type: 'string' },
            requestId: { type: 'string', description: 'on a 5xx: the id the server logged the failure under' },
            retryAfterMs: { type: 'integer', description: 'on 429 and 503: how long to wait before calling again' },
          },
        },
      },
    },
  };
}

/**
 * An operation's schema as the OpenAPI document holds it: a reference resolves against the whole
 * document there, so its $defs live in components.schemas (MCP publishes each schema whole).
 */
function openApiSchema<T extends Record<string, unknown>>(schema: T): T {
  const { $defs: _defs, ...rest } = schema;
  return JSON.parse(JSON.stringify(rest).replaceAll('"#/$defs/', '"#/components/schemas/')) as T;
}
