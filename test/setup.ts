import { DefaultLogger, Runtime } from '@temporalio/worker';

// Worker state changes are logged at INFO; test output should show warnings and failures only.
Runtime.install({ logger: new DefaultLogger('WARN') });
