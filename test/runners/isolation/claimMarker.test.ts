import { describe, expect, it } from 'vitest';
import { CLAIM_MARKER_ENV, claimMarker, environHoldsClaim } from '../../../src/runners/isolation/claimMarker.js';

/** An environment as /proc/<pid>/environ holds it. */
const environ = (vars: Record<string, string>) =>
  `${Object.entries(vars)
    .map(([name, value]) => `${name}=${value}`)
    .join('\0')}\0`;

describe('the claim marker an agent carries in its environment', () => {
  it('names the task and the claim version', () => {
    expect(CLAIM_MARKER_ENV).toBe('BATON_CLAIM');
    expect(claimMarker('sdk/tests', 3)).toBe('sdk/tests@3');
  });

  it("matches the environment of an agent started for that claim, and only that claim's", () => {
    const agent = environ({ PATH: '/usr/bin', [CLAIM_MARKER_ENV]: claimMarker('sdk/tests', 12), BATON_CLAIM_VERSION: '12' });
    expect(environHoldsClaim(agent, 'sdk/tests', 12)).toBe(true);
    // A version that is a prefix of the real one, a later claim, another task of the graph or another graph.
    expect(environHoldsClaim(agent, 'sdk/tests', 1)).toBe(false);
    expect(environHoldsClaim(agent, 'sdk/tests', 13)).toBe(false);
    expect(environHoldsClaim(agent, 'sdk/test', 12)).toBe(false);
    expect(environHoldsClaim(agent, 'sdk2/tests', 12)).toBe(false);
  });

  it('is not fooled by the marker inside another variable, nor by a process with no environment', () => {
    expect(environHoldsClaim(environ({ NOTE: `${CLAIM_MARKER_ENV}=sdk/tests@1` }), 'sdk/tests', 1)).toBe(false);
    expect(environHoldsClaim('', 'sdk/tests', 1)).toBe(false);
  });
});
