// Which authentication a PostgreSQL server demands of a TCP login, read from the server's first
// answer to a startup message (protocol 3.0). A client library cannot tell: it answers whatever
// the server asks, including a request for the password in clear text.
import { connect } from 'node:net';

/** What the server asked for: `trust` means it let the login in without any password. */
type AuthMethod = 'trust' | 'password' | 'md5' | 'scram-sha-256' | 'gss' | 'sspi' | 'refused';

interface AuthProbe {
  method: AuthMethod;
  /** The server's error message when it refused the login outright (no pg_hba line matched). */
  error?: string;
}

/** How long to wait for the server's answer. (Default: 5 s) */
const PROBE_TIMEOUT_MS_DEFAULT = 5_000;
const PROTOCOL_3_0 = 196_608;
// AuthenticationRequest codes (the 'R' message) of the frontend/backend protocol.
const AUTH_CODES: Record<number, AuthMethod> = { 0: 'trust', 3: 'password', 5: 'md5', 7: 'gss', 9: 'sspi', 10: 'scram-sha-256' };

/**
 * Opens a TCP connection, sends a startup message for `user` on `database`, and reports the
 * method the server answered with; it never sends a password.
 */
export function probeAuthMethod(options: {
  host: string;
  port: number;
  user: string;
  database: string;
  /** (Default: 5 s) */
  timeoutMs?: number;
}): Promise<AuthProbe> {
  const params = Buffer.from(`user\0${options.user}\0database\0${options.database}\0\0`);
  const startup = Buffer.alloc(8 + params.length);
  startup.writeInt32BE(startup.length, 0);
  startup.writeInt32BE(PROTOCOL_3_0, 4);
  params.copy(startup, 8);

  return new Promise((resolve, reject) => {
    const socket = connect({ host: options.host, port: options.port });
    let received = Buffer.alloc(0);
    const done = (outcome: AuthProbe | Error) => {
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    socket.setTimeout(options.timeoutMs ?? PROBE_TIMEOUT_MS_DEFAULT, () => done(new Error('no answer to the startup message')));
    socket.on('error', done);
    socket.on('connect', () => socket.write(startup));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 5 || received.length < 1 + received.readInt32BE(1)) return;
      const type = String.fromCharCode(received[0]!);
      const body = received.subarray(5, 1 + received.readInt32BE(1));
      if (type === 'E') return done({ method: 'refused', error: errorMessage(body) });
      if (type !== 'R') return done(new Error(`unexpected first message '${type}'`));
      const code = body.readInt32BE(0);
      const method = AUTH_CODES[code];
      if (!method) return done(new Error(`unknown authentication request ${code}`));
      if (method === 'scram-sha-256' && !body.subarray(4).toString().split('\0').includes('SCRAM-SHA-256')) {
        return done(new Error(`SASL without SCRAM-SHA-256: ${body.subarray(4).toString()}`));
      }
      done({ method });
    });
  });
}

// ErrorResponse fields are a type byte and a NUL-terminated string each; 'M' is the message.
function errorMessage(body: Buffer): string {
  for (const field of body.toString().split('\0')) if (field.startsWith('M')) return field.slice(1);
  return 'refused';
}
