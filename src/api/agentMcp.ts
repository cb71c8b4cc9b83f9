// The agent API over MCP: one tool per operation, whose input schema is the operation's JSON Schema
// (the one OpenAPI publishes, one-of rules included), whose title and annotations (read-only,
// destructive, idempotent, open-world) come from the operation's `effect` in the same table, and
// which a caller sees only when its token's scopes allow the operation. Arguments are not validated
// here but by the operation itself, so a refused argument, and a call outside the token's scopes,
// come back as the same problem details as over HTTP.
import type http from 'node:http';
// The low-level server: McpServer validates arguments itself and answers a refusal as plain text.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { NotFoundError } from '../errors.js';
import type { Log } from '../log.js';
import { packageVersion } from '../packageRoot.js';
import { OPERATION_NAMES, type OperationName } from './operationNames.js';
import { OPERATIONS, operationJsonSchema } from './operations.js';
import { answerProblem, newRequestId } from './problems.js';

/** MCP tool names: the operation's, with `_` for `.` (some clients allow only [A-Za-z0-9_-]). */
export function mcpToolName(operation: OperationName): string {
  return operation.replaceAll('.', '_');
}

const OPERATION_OF_TOOL = new Map(OPERATION_NAMES.map((name) => [mcpToolName(name), name]));

/** The operation a tool name stands for; undefined for a name that is no tool of baton's. */
export function operationOfTool(name: string): OperationName | undefined {
  return OPERATION_OF_TOOL.get(name);
}

/**
 * MCP's hints for `operation`, from its effect in the operation table. All four are stated, since
 * MCP's defaults (not read-only, destructive, open world) fit hardly any of baton's operations.
 */
function annotationsOf(operation: OperationName): ToolAnnotations {
  const { title, effect } = OPERATIONS[operation];
  const read = effect.kind === 'read';
  return {
    title,
    readOnlyHint: read,
    destructiveHint: effect.kind === 'destructive',
    idempotentHint: read || effect.idempotent,
    openWorldHint: !read && effect.openWorld === true,
  };
}

/**
 * The tools, made on first use: they depend on nothing but the operation table. None has an
 * `outputSchema`: the operations declare no schema of their results.
 */
let tools: Map<OperationName, Tool> | undefined;

function mcpTools(): Map<OperationName, Tool> {
  return (tools ??= new Map(
    OPERATION_NAMES.map((name) => [
      name,
      {
        name: mcpToolName(name),
        title: OPERATIONS[name].title,
        description: `${OPERATIONS[name].description} (scope: ${OPERATIONS[name].scope})`,
        inputSchema: operationJsonSchema(name),
        annotations: annotationsOf(name),
      },
    ]),
  ));
}

/**
 * A tool result's structured content, which MCP wants as an object: a result that is a plain
 * object as it is; any other (a list, `null`) as `{ "result": <it> }`.
 */
function structuredResult(result: unknown): Record<string, unknown> {
  return typeof result === 'object' && result !== null && !Array.isArray(result) ? (result as Record<string, unknown>) : { result };
}

interface McpServerOptions {
  /** The operations the caller's token may call, in table order: `tools/list` lists only theirs. */
  operations(): Promise<readonly OperationName[]>;
  /** Where a tool call's 5xx is logged. */
  log: Log;
  /** The id a 5xx is logged and answered under. (Default: a new one per tool call) */
  requestId?: string;
}

/**
 * An MCP server whose tools are the agent API's operations the caller may call, each performed by
 * `perform`. A result is text (its JSON) and structured content; a refusal is a tool error with its
 * problem details, as text and as structured content. A tool not listed may still be called, and
 * is refused by the operation as over HTTP.
 */
export function createMcpServer(
  perform: (operation: OperationName, input: unknown) => Promise<unknown>,
  options: McpServerOptions,
): Server {
  const server = new Server({ name: 'baton', version: packageVersion() }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const all = mcpTools();
    return { tools: (await options.operations()).map((name) => all.get(name)!) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    try {
      const operation = OPERATION_OF_TOOL.get(name);
      if (!operation) throw new NotFoundError(`no tool ${JSON.stringify(name)}; the tools are ${[...OPERATION_OF_TOOL.keys()].join(', ')}`);
      const result = await perform(operation, request.params.arguments);
      return { content: [{ type: 'text' as const, text: JSON.stringify(result) }], structuredContent: structuredResult(result) };
    } catch (error) {
      const problem = answerProblem(options.log, options.requestId ?? newRequestId(), `MCP tool ${name}`, error);
      return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(problem) }], structuredContent: problem };
    }
  });
  return server;
}

/** Answers one MCP request (stateless Streamable HTTP, JSON responses) with a server of its own. */
export async function serveMcp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: unknown,
  perform: (operation: OperationName, input: unknown) => Promise<unknown>,
  options: McpServerOptions,
): Promise<void> {
  const server = createMcpServer(perform, options);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
