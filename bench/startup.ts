// start-up: how long `baton --help` and `baton api whoami` take as whole processes, against `node -e 0`
// in the same run. It measures the command as installed (the compiled dist/, built first), since a
// checkout runs the TypeScript source through tsx. `whoami` is answered by an agent API this process serves.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type pg from 'pg';
import { createAgentApi } from '../src/api/agentApi.js';
import { startAgentServer } from '../src/api/agentServer.js';
import { agentTokenCreate } from '../src/api/tokens.js';
import { run } from '../src/dev/run.js';
import type { Log } from '../src/log.js';
import { PACKAGE_ROOT } from '../src/packageRoot.js';
import { interleave } from './interleave.js';
import { nowMs, round, spread } from './stats.js';

/** The installed command's entry point: what `bin/baton.js` loads once the package is installed. */
const COMPILED_CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli', 'main.js');

/** Wall time of one whole process, from spawn to exit, in ms; a failure is an error, not a fast sample. */
function processMs(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = nowMs();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = nowMs() - start;
      if (code === 0) resolve(ms);
      else reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}

export async function runStartupBench(pool: pg.Pool, options: { pairs: number }, log: Log) {
  log('  building dist/ (npm run build) ...');
  await run('npm', ['run', 'build'], { cwd: PACKAGE_ROOT, timeoutMs: 900_000 });
  const api = createAgentApi({ db: pool, log });
  const server = await startAgentServer(api, { host: '127.0.0.1', port: 0 });
  try {
    const { secret } = await agentTokenCreate(pool, { identity: 'bench-startup', scopes: ['read'], createdBy: 'bench' });
    const env = { ...process.env, BATON_URL: server.url, BATON_TOKEN: secret };
    const baseline = () => processMs(['-e', '0'], env);
    const compare = async (what: string, args: string[]) => {
      const pairs = await interleave(
        what,
        options.pairs,
        { candidate: () => processMs([COMPILED_CLI, ...args], env), baseline },
        log,
        (p) => `${round(p.candidate, 0)} ms / node -e 0 ${round(p.baseline, 0)} ms`,
      );
      return {
        ratio: spread(pairs.map((p) => p.candidate / p.baseline)),
        candidateMs: spread(pairs.map((p) => p.candidate)),
        baselineMs: spread(pairs.map((p) => p.baseline)),
      };
    };
    return { help: await compare('baton --help', ['--help']), whoami: await compare('baton api whoami', ['api', 'whoami']) };
  } finally {
    await server.close();
    await api.close();
  }
}
