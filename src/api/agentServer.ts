import { chmod, chown, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AgentApi } from './agentApi.js';

/** Environment variable carrying the agent API's base URL to an agent or the CLI. */
export const AGENT_URL_ENV = 'BATON_URL';
/** Environment variable carrying the bearer token (a run's own, or one from `baton token create`). */
export const AGENT_TOKEN_ENV = 'BATON_TOKEN';
/** Environment variable naming the Unix socket a run's endpoint listens on, when it does (isolated agents). */
export const AGENT_SOCKET_ENV = 'BATON_SOCKET';
/** The base URL used with the socket: its host part is never resolved. */
const SOCKET_URL = 'http://baton-run-endpoint';

type AgentServerListen =
  | { port: number; host: string }
  /** A Unix socket only `owner` (default: the worker's user) may connect to (mode 0600). */
  | { socketPath: string; owner?: { uid: number; gid: number } };

export interface AgentServer {
  /** Base URL: `http://<host>:<port>`, or a fixed one to use with `socketPath`. */
  url: string;
  socketPath?: string;
  close(): Promise<void>;
}

/**
 * Serves `api` over HTTP on a TCP address or a Unix socket. Bytes Node cannot read as an HTTP
 * request are answered in JSON too (Node's own answer has no body). Closing cuts every open call:
 * for a run, the run is over.
 */
export async function startAgentServer(
  api: AgentApi,
  listen: AgentServerListen,
  options: { /** Connections open at once; more are closed as they come. (Default: no bound) */ maxConnections?: number } = {},
): Promise<AgentServer> {
  // The host is never used (the socket URL's is made up), so a request without one is answered like any other.
  // A caller gets 15 s to send its headers and 60 s for its whole request: slow senders cannot hold
  // connections (and their buffered bodies) for Node's default five minutes.
  const server = http.createServer({ requireHostHeader: false, headersTimeout: 15_000, requestTimeout: 60_000 }, (req, res) =>
    api.handle(req, res),
  );
  // A client that half-closes once its request is sent is still answered: every answer may wait
  // for the store (the token is checked first), and Node otherwise ends such a socket at once.
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex & { bytesWritten?: number }) => {
    if (!socket.writable || socket.bytesWritten) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body = JSON.stringify({
      type: 'urn:baton:error:invalid_input',
      title: 'BadRequest',
      status,
      code: 'invalid_input',
      detail: `not an HTTP request baton can read: ${error.message}`,
    });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('socketPath' in listen) server.listen(listen.socketPath, () => resolve());
    else server.listen(listen.port, listen.host, () => resolve());
  });
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  if (!('socketPath' in listen)) {
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { url: `http://${host}:${address.port}`, close };
  }
  const { socketPath, owner } = listen;
  try {
    await chmod(socketPath, 0o600);
    if (owner) await chown(socketPath, owner.uid, owner.gid);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    url: SOCKET_URL,
    socketPath,
    close: async () => {
      await close();
      // The agent may have replaced the socket with something else; what it left is not the run's concern.
      await rm(socketPath, { force: true }).catch(() => undefined);
    },
  };
}
