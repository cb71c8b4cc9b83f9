import http from 'node:http';
import https from 'node:https';

/** A complete HTTP answer. */
export interface HttpAnswer {
  status: number;
  body: string;
}

/** Thrown when a request got no complete answer. `code` is Node's (ECONNREFUSED, ECONNRESET, ...) or TIMEOUT. */
export class HttpRequestError extends Error {
  override readonly name = 'HttpRequestError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One request on a connection of its own, with a deadline for the whole exchange. Unlike a
 * pooled `fetch`, nothing here ever repeats a request on its own after a reset socket, so one
 * call of this function is at most one delivery.
 */
export function httpRequest(
  url: string,
  options: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number; socketPath?: string },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = (target.protocol === 'https:' ? https : http).request(target, {
      method: options.method,
      headers: options.body === undefined ? options.headers : { ...options.headers, 'content-length': Buffer.byteLength(options.body) },
      agent: false,
      // A Unix socket (an isolated agent's tool endpoint) replaces the URL's host and port.
      ...(options.socketPath ? { socketPath: options.socketPath } : {}),
    });
    const timer = setTimeout(() => {
      request.destroy(new HttpRequestError('TIMEOUT', `no complete answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    const fail = (error: Error & { code?: string }) => {
      clearTimeout(timer);
      reject(error instanceof HttpRequestError ? error : new HttpRequestError(error.code ?? 'EUNKNOWN', error.message));
    };
    request.once('error', fail);
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('error', fail);
      response.once('aborted', () => fail(new HttpRequestError('ECONNRESET', 'the answer was cut off')));
      response.once('end', () => {
        clearTimeout(timer);
        if (!response.complete) {
          fail(new HttpRequestError('ECONNRESET', 'the answer was cut off'));
          return;
        }
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.end(options.body);
  });
}
