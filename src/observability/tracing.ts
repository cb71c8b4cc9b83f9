// SPEC U6: OpenTelemetry traces across client, workflow, activity and store call, exported over
// OTLP (HTTP) when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, off
// otherwise. Temporal's OpenTelemetry interceptors carry the trace from the client that starts a
// graph through its workflows into the activities, where baton's store calls are spans of their own.
// Everything here loads only when tracing is on.
import { createRequire } from 'node:module';
import type { WorkerOptions } from '@temporalio/worker';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { readEnv } from '../config.js';
import { InvalidInputError } from '../errors.js';
import type { Log } from '../log.js';

const ENDPOINT_ENVS = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'];
const INTERCEPTORS_PACKAGE = '@temporalio/interceptors-opentelemetry';

export interface Tracing {
  /** Where spans go. */
  endpoint: string;
  /** For a baton worker: its activity interceptors and the sink its workflows' spans leave through. */
  workerOptions: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** The workflow interceptors' module, to bundle with baton's workflows. */
  workflowInterceptorModules: string[];
  /** For a client that starts workflows: carries its trace into them. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Whether the environment asks for traces: an OTLP endpoint is set and OTEL_TRACES_EXPORTER is not `none`. */
export function tracingEndpoint(): string | undefined {
  if (readEnv('OTEL_TRACES_EXPORTER') === 'none') return undefined;
  for (const name of ENDPOINT_ENVS) {
    const value = readEnv(name);
    if (value) return value;
  }
  return undefined;
}

/** This process's tracing, once started: a process has one tracer provider, named after its first caller. */
let started: Promise<Tracing | undefined> | undefined;

/**
 * Starts tracing for this process when the environment asks for it (see `tracingEndpoint`), as
 * service `OTEL_SERVICE_NAME` (default `baton-<component>`); undefined otherwise. Registers the
 * global tracer provider, so baton's own spans (store calls) join the trace of the activity they run
 * in. Called again (a worker's command opening a Temporal client too), it gives what the first call started.
 */
export function startTracing(component: string, log: Log): Promise<Tracing | undefined> {
  started ??= start(component, log).catch((error: unknown) => {
    started = undefined;
    throw error;
  });
  return started;
}

async function start(component: string, log: Log): Promise<Tracing | undefined> {
  const endpoint = tracingEndpoint();
  if (!endpoint) return undefined;
  const interceptors = await import(INTERCEPTORS_PACKAGE).catch((error: unknown) => {
    throw new InvalidInputError(
      `tracing is on (${ENDPOINT_ENVS.join(' or ')} is set) but ${INTERCEPTORS_PACKAGE} cannot be loaded: ` +
        `install it beside @temporalio/worker (npm install ${INTERCEPTORS_PACKAGE}@<your Temporal SDK version>), or unset the variable (${String(error)})`,
    );
  });
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, { Resource }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const resource = new Resource({ 'service.name': readEnv('OTEL_SERVICE_NAME') ?? `baton-${component}` });
  // The exporter reads the endpoint, headers and timeout from the standard OTEL_EXPORTER_OTLP_* variables.
  const processor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  log(`Tracing: spans of baton-${component} go to ${endpoint} (OTLP over HTTP)`);
  const require = createRequire(import.meta.url);
  return {
    endpoint,
    workerOptions: {
      interceptors: {
        activity: [
          (ctx) => ({
            inbound: new interceptors.OpenTelemetryActivityInboundInterceptor(ctx),
            outbound: new interceptors.OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: { exporter: interceptors.makeWorkflowExporter(processor, resource) },
    },
    workflowInterceptorModules: [require.resolve(`${INTERCEPTORS_PACKAGE}/lib/workflow-interceptors`)],
    clientInterceptors: [new interceptors.OpenTelemetryWorkflowClientInterceptor()],
    shutdown: async () => {
      started = undefined;
      await provider.shutdown();
    },
  };
}
