// Run by a command agent inside a run: starts the MCP server its run's .mcp.json names (`baton
// mcp`, over stdio) the way an MCP client such as Claude Code does, and prints what it saw as JSON.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const config = JSON.parse(readFileSync('.mcp.json', 'utf8')) as { mcpServers: { baton: { command: string; args: string[] } } };
const { command, args } = config.mcpServers.baton;
const client = new Client({ name: 'probe', version: '1' });
await client.connect(new StdioClientTransport({ command, args, env: process.env as Record<string, string>, stderr: 'inherit' }));
const { tools } = await client.listTools();
const text = async (name: string, input: Record<string, unknown> = {}) => {
  const result = (await client.callTool({ name, arguments: input })) as { isError?: boolean; content: { text: string }[] };
  // baton's answers are JSON: a result, or a refusal's problem details.
  return { isError: result.isError ?? false, body: JSON.parse(result.content[0]!.text) };
};
const whoami = await text('whoami');
const forged = await text('note_add', { text: 'as someone else', actor: 'victim' });
await client.close();
process.stdout.write(`${JSON.stringify({ tools: tools.map((t) => t.name), whoami, forged })}\n`);
