// S7: the agent API as clients nobody here wrote see it. Schemathesis generates requests from the
// published OpenAPI document (valid ones, and ones that break it on purpose) against `baton serve`
// on its own baton_agent login and real Postgres; the Python MCP SDK calls the MCP side. Neither
// may find a 5xx, an answer outside the published schema, schema-valid input refused as invalid,
// or invalid input accepted. Both come from PyPI at the versions in requirements.txt, installed by
// install.sh (which `.ci/run` runs first) into a virtual environment under the baton home; an
// install that fails fails the test with the command that makes it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpToolName } from '../../src/api/agentMcp.js';
import type { OperationName } from '../../src/api/operationNames.js';
import { OPERATIONS, operationJsonSchema } from '../../src/api/operations.js';
import { batonHome } from '../../src/config.js';
import { tokenFor, useAgentServer } from '../api/helpers.js';
import { useTaskStack } from '../helpers/taskStack.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** Where `.ci/run` installs the outside clients: a virtual environment of their own. */
const VENV = process.env.OUTSIDE_CLIENTS_VENV ?? path.join(batonHome(), 'tools', 'outside-clients');
const INSTALL = path.join(HERE, 'install.sh');

/** Runs a program of the venv to its end: exit code and everything it printed. */
function runVenv(program: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // In a folder of the test's: schemathesis keeps its caches and crash files where it runs.
    const child = spawn(path.join(VENV, 'bin', program), args, {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      cwd: scratch,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'baton-outside-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

const stack = useTaskStack();
// Fuzzing makes many calls from one address with one token: the rate limits are tested elsewhere (agentApiDoor.test.ts).
const api = useAgentServer(() => stack.db, { rateLimit: { perSecond: 100_000, burst: 100_000 } });

describe('S7: clients baton did not write', () => {
  let secret: string;
  beforeAll(async () => {
    // Already there when .ci/run ran install.sh; a first `npm test` elsewhere installs them now (about a minute).
    const installed = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('bash', [INSTALL, VENV], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => process.stdout.write(chunk) && (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, output }));
    });
    if (installed.code !== 0) {
      throw new Error(
        `the outside-client tests need schemathesis and the Python mcp SDK, and could not install them (bash ${INSTALL} ${VENV}; PyPI must be reachable):\n${installed.output}`,
      );
    }
    // No `submit`: pool.claim, which may wait a minute for work, is refused at once after its input is checked.
    secret = (await tokenFor(stack.db, 'outside-fuzzer', ['read', 'notes', 'objects', 'view'])).secret;
  }, 600_000);

  it(
    'schemathesis, from the OpenAPI document, finds no 5xx and no answer or refusal the document does not state',
    { timeout: 600_000 },
    async () => {
      const { code, output } = await runVenv('schemathesis', [
        '--config-file',
        path.join(HERE, 'schemathesis.toml'),
        'run',
        `${api.url}/openapi.json`,
        '--header',
        `Authorization: Bearer ${secret}`,
        '--checks',
        'not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance',
        '--phases',
        'examples,coverage,fuzzing',
        '--max-examples',
        '10',
        '--seed',
        '19',
        '--workers',
        '2',
        // Its generator cannot read STORABLE_TEXT_PATTERN (a range of surrogates), so it is told the
        // same rule its own way: no NUL, and text that is UTF-8 (no unpaired surrogate).
        '--generation-allow-x00',
        'false',
        '--generation-codec',
        'utf-8',
        '--generation-database',
        'none',
        '--no-color',
        '--output-sanitize',
        'true',
      ]);
      expect(output, output).toMatch(/Test cases:\s+\d+ generated/); // it ran, and said how many
      expect(code, output).toBe(0);
    },
  );

  it("the Python MCP SDK sees the operations of the token's scopes, their schemas and hints, results and refusals as data", async () => {
    const { code, output } = await runVenv('python', [path.join(HERE, 'mcp_probe.py'), `${api.url}/mcp`], { BATON_TOKEN: secret });
    expect(code, output).toBe(0);
    const report = JSON.parse(output.trim().split('\n').at(-1)!);
    // The token's scopes are read, notes, objects and view: neither the run's operations, nor pool.claim, nor an admin's.
    const allowed = (Object.keys(OPERATIONS) as OperationName[]).filter((name) =>
      ['read', 'notes', 'objects', 'view'].includes(OPERATIONS[name].scope),
    );
    expect(Object.keys(report.tools).sort()).toEqual(allowed.map(mcpToolName).sort());
    for (const name of allowed) {
      expect(report.tools[mcpToolName(name)], name).toEqual(operationJsonSchema(name));
      const { title, effect } = OPERATIONS[name];
      expect(report.hints[mcpToolName(name)], name).toEqual({
        title,
        annotations: {
          title,
          readOnlyHint: effect.kind === 'read',
          destructiveHint: effect.kind === 'destructive',
          idempotentHint: effect.kind === 'read' || effect.idempotent,
          openWorldHint: false,
        },
      });
    }
    expect(report.whoami).toMatchObject({ isError: false, body: { identity: 'outside-fuzzer' } });
    expect(report.whoami.structured).toEqual(report.whoami.body);
    for (const refused of ['actor', 'nul', 'both']) {
      expect(report[refused], refused).toMatchObject({
        isError: true,
        body: { code: 'invalid_input', status: 400, type: 'urn:baton:error:invalid_input' },
      });
      expect(report[refused].structured, refused).toEqual(report[refused].body);
    }
    expect(report.actor.body.detail).toMatch(/actor/);
    expect(report.unknown).toMatchObject({ isError: true, body: { code: 'not_found' } });
  });
});
