/**
 * The retry delay of an attempt that is failed only so that another worker takes it (a worker
 * handing its work back as it stops; an attempt handed to a silent worker): at once. Temporal still
 * fires it no sooner than its timer queue's shift (`history.timerProcessorMaxTimeShift`, see
 * src/dev/temporalDevServer.ts).
 */
export const RETRY_AT_ONCE_MS = 10;
