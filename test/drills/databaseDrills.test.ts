import { describe, expect, it } from 'vitest';
import { runClaimRaceDrill } from '../../src/drills/d1ClaimRace.js';
import { runStaleSubmitDrill } from '../../src/drills/d3StaleSubmit.js';
import { runFailedVerificationDrill } from '../../src/drills/d4FailedVerification.js';
import { createTestDatabase, useTestDatabase } from '../helpers/db.js';
import { dropReleaseGuard, readThenUpdateClaim, releasingSubmit, unfencedSubmit } from './brokenVariants.js';

const db = useTestDatabase();

describe('D1: two concurrent claims against one ready task', () => {
  it('has exactly one winner in each of 1,000 trials', async () => {
    const result = await runClaimRaceDrill(db.pool, { trials: 1_000 });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ trials: 1_000, winners: 1_000 });
  });

  it('fails against a plain read-then-update claim', async () => {
    const result = await runClaimRaceDrill(db.pool, { trials: 300, claim: readThenUpdateClaim });
    expect(result.passed).toBe(false);
    expect(result.violations[0]).toMatch(/2 claimants won/);
  });
});

describe('D3: the old owner submits after a reclaim', () => {
  it('refuses and logs the late submit, and accepts the new owner once', async () => {
    const result = await runStaleSubmitDrill(db.pool, { trials: 50 });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ trials: 50, refused: 50, logged: 50, accepted: 50 });
  });

  it('fails with the fencing predicate removed', async () => {
    const result = await runStaleSubmitDrill(db.pool, { trials: 5, submit: unfencedSubmit });
    expect(result.passed).toBe(false);
    expect(result.violations.join('\n')).toMatch(/late submit was accepted/);
  });
});

describe('D4: a failed verification', () => {
  it('keeps every dependent blocked and unclaimable', async () => {
    const result = await runFailedVerificationDrill(db.pool, { trials: 20 });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ blockedDependents: 40, claimsRefused: 40 });
  });

  it("the database itself refuses a release on the agent's say-so", async () => {
    await expect(runFailedVerificationDrill(db.pool, { trials: 1, submit: releasingSubmit })).rejects.toThrow(
      /cannot become ready before its dependencies are verified/,
    );
  });

  it('fails against a build that releases without verification', async () => {
    const broken = await createTestDatabase();
    try {
      await broken.pool.query(dropReleaseGuard);
      const result = await runFailedVerificationDrill(broken.pool, { trials: 2, submit: releasingSubmit });
      expect(result.passed).toBe(false);
      expect(result.violations.join('\n')).toMatch(/is ready although b is not verified/);
    } finally {
      await broken.drop();
    }
  });
});
