// Adds baton to a worker a team already runs: one plugin beside the team's own workflows and
// activities, on the team's connection, namespace and task queue. The worker then runs the team's
// `greet` workflow and a one-task baton graph whose agent and verifier are the team's functions.
//
//   npx baton migrate   # once per database
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=localhost:7233 npx tsx examples/embed-worker.ts
import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createBatonClient, createBatonPlugin, createPool, defineFunctionGraph, temporalSettings } from '@batonhq/baton';
import * as activities from './host/activities.js';
import { greet } from './host/workflows.js';

const taskQueue = process.env.TASK_QUEUE ?? 'greetings';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

// Where the agent's work lands; in a real deployment a git remote or a bucket, named by the revision.
const written = new Map<string, string>();

const hello = defineFunctionGraph({
  name: 'hello',
  tasks: {
    write: {
      description: 'write a greeting',
      run: async (ctx) => {
        const text = `Hello from ${ctx.claim.taskId}`;
        written.set(sha256(text), text);
        return { revision: sha256(text), testCommand: 'starts with Hello', agentResult: { exitCode: 0, outputDigest: sha256(text) } };
      },
      verify: async (ctx) => {
        const text = written.get(ctx.artifact.revision) ?? '';
        return { exitCode: text.startsWith('Hello') ? 0 : 1, outputDigest: sha256(text), outputTail: text };
      },
    },
  },
});

const { connectionOptions, namespace } = temporalSettings(); // TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, temporal.toml
const connection = await NativeConnection.connect(connectionOptions);
const db = createPool(process.env.DATABASE_URL!);

const worker = await Worker.create({
  connection,
  namespace,
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./host/workflows.ts', import.meta.url)),
  activities,
  plugins: [createBatonPlugin({ db, ...hello.functions })],
});

const client = new Client({ connection, namespace });
const baton = createBatonClient({ db, temporal: client, taskQueue });
const outcome = await worker.runUntil(async () => {
  const greeting = await client.workflow.execute(greet, { taskQueue, workflowId: `greet-${randomUUID()}`, args: ['Temporal'] });
  const graph = await baton.submitGraph(hello.input(), 'embed-worker example');
  return { greeting, graph: await baton.waitForGraph(graph.id) };
});
console.log(JSON.stringify(outcome));
await db.end();
await connection.close();
