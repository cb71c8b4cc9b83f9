/** How an isolated command is started: under its own uid and gid, inside a sandbox, or both. */
export interface Confinement {
  /** Program and arguments put before `sh -c <command>`: bubblewrap's, or `setpriv --no-new-privs`. (Default: none) */
  prefix?: string[];
  /** The per-run user the command runs as. (Default: the worker's) */
  user?: { uid: number; gid: number };
  /** The slirp4netns that gives a sandbox made for the `outside` network its route out (sandboxNetwork.ts). */
  slirp4netns?: string;
}
