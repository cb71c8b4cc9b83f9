// A graph defined in TypeScript: the three tasks of an SDK integration, each done by an agent
// function and checked by a verifier function. `tests` starts only once both other tasks are
// verified, and is told the revisions they were verified at. The first `parsing` artifact fails
// its verification, so baton runs that agent again before anything downstream starts.
//
//   npx baton migrate   # once per database
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=localhost:7233 npx tsx examples/typescript-graph.ts
import { createHash } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import {
  createBatonClient,
  createBatonWorker,
  createPool,
  defineFunctionGraph,
  temporalSettings,
  type Artifact,
  type VerifyContext,
} from '@batonhq/baton';

const taskQueue = process.env.TASK_QUEUE ?? 'sdk-integration';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

// Where the agents' work lands; in a real deployment a git remote or a bucket, named by the revision.
const store = new Map<string, string>();

function commit(content: string): Artifact {
  const revision = sha256(content);
  store.set(revision, content);
  return { revision, testCommand: 'check the content', agentResult: { exitCode: 0, outputDigest: revision } };
}

async function check(ctx: VerifyContext, passes: (content: string) => boolean) {
  const content = store.get(ctx.artifact.revision) ?? '';
  return { exitCode: passes(content) ? 0 : 1, outputDigest: sha256(content), outputTail: content };
}

// Shared by the code that submits the graph and the workers that run it.
const sdkIntegration = defineFunctionGraph({
  name: 'sdk-integration',
  policy: { maxAttempts: 3, onVerificationFailure: 'rerun' },
  tasks: {
    request: {
      description: 'request construction',
      run: async (ctx) => commit(`buildRequest(${JSON.stringify(ctx.claim.spec.payload)})`),
      verify: (ctx) => check(ctx, (content) => content.startsWith('buildRequest(')),
    },
    parsing: {
      description: 'response parsing',
      // The first claim leaves a TODO behind; the verifier refuses it.
      run: async (ctx) => commit(ctx.claim.claimVersion === 1 ? 'parseResponse() // TODO' : 'parseResponse()'),
      verify: (ctx) => check(ctx, (content) => !content.includes('TODO')),
    },
    tests: {
      description: 'migration tests',
      dependsOn: ['request', 'parsing'],
      run: async (ctx) => commit(`tests against ${JSON.stringify(ctx.claim.upstreamRevisions)}`),
      verify: (ctx) => check(ctx, (content) => content.startsWith('tests against')),
    },
  },
});

const { connectionOptions, namespace } = temporalSettings();
const connection = await NativeConnection.connect(connectionOptions);
const db = createPool(process.env.DATABASE_URL!);
const worker = await createBatonWorker({ connection, namespace, taskQueue, db, ...sdkIntegration.functions });
const baton = createBatonClient({ db, temporal: new Client({ connection, namespace }), taskQueue });

const outcome = await worker.runUntil(
  (async () => {
    const graph = await baton.submitGraph(
      sdkIntegration.input({ payloads: { request: { endpoint: '/v1/orders' } } }),
      'typescript-graph example',
    );
    const result = await baton.waitForGraph(graph.id);
    const tasks = (await baton.graphTasks(graph.id)).map(({ key, status, claimVersion, verifiedRevision, upstreamRevisions }) => ({
      key,
      status,
      claimVersion,
      verifiedRevision,
      upstreamRevisions,
    }));
    return { result, tasks };
  })(),
);
console.log(JSON.stringify(outcome));
await db.end();
await connection.close();
