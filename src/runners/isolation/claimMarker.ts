/** The environment variable a command agent is started with to name the claim it runs for. */
export const CLAIM_MARKER_ENV = 'BATON_CLAIM';

/** The value of BATON_CLAIM for a claim: `<task id>@<claim version>`, as in `sdk/tests@3`. */
export function claimMarker(taskId: string, claimVersion: number): string {
  return `${taskId}@${claimVersion}`;
}

/**
 * Whether a process environment as /proc/<pid>/environ holds it (NUL-separated `NAME=value`)
 * names exactly this claim: recovery kills only an agent that still runs for it.
 */
export function environHoldsClaim(environ: string, taskId: string, claimVersion: number): boolean {
  return environ.split('\0').includes(`${CLAIM_MARKER_ENV}=${claimMarker(taskId, claimVersion)}`);
}
