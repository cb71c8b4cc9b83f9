// `npm test`: the lint and the suite side by side, failing when either fails. The lint's type check
// holds one core for a minute, and the suite's first minute is mostly its servers starting, so
// together they take about the suite's time; one after the other, a minute more. Arguments go to
// vitest (`npm test -- test/db`). The lint's output is printed when it ends, with its verdict.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

const exitOf = (child: ReturnType<typeof spawn>) =>
  new Promise<number>((resolve) => child.once('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const lint = spawn('npm', ['run', '--silent', 'lint'], { stdio: ['ignore', 'pipe', 'pipe'] });
let lintOutput = '';
for (const stream of [lint.stdout, lint.stderr]) stream.on('data', (chunk: Buffer) => (lintOutput += chunk.toString()));
const linted = exitOf(lint).then((code) => {
  process.stdout.write(`\n== npm run lint: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}\n${lintOutput.trimEnd()}\n\n`);
  return code;
});

const vitest = path.join(path.dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
const suite = spawn(process.execPath, [vitest, 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
const [lintCode, suiteCode] = await Promise.all([linted, exitOf(suite)]);
if (lintCode !== 0) process.stdout.write('npm test: the lint FAILED (its output is above)\n');
process.exitCode = lintCode || suiteCode;
