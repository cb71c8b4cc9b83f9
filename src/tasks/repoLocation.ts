// Where a graph's repository is: a path on the worker's machine, or a git remote that every worker
// keeps a mirror of (src/runners/repository.ts). git's own rules tell the two apart: `scheme://...`
// is a URL, `[user@]host:path` with no slash before the colon is scp-like ssh, anything else a path.

/** The transports a graph may name; git's others (`ext::`, `fd::`, helpers) run programs or reach nothing. */
export const REMOTE_PROTOCOLS = ['file', 'git', 'ssh', 'http', 'https'] as const;

const URL_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const SCP_FORM = /^(?:[^@/:]+@)?([^/:]+):/;
const HELPER_FORM = /^[A-Za-z][A-Za-z0-9+.-]*::/;

/** Whether `repo` names a git remote rather than a path. */
export function isRemoteRepo(repo: string): boolean {
  return URL_FORM.test(repo) || HELPER_FORM.test(repo) || (SCP_FORM.test(repo) && !repo.startsWith('.'));
}

/**
 * What is wrong with `repo` as a graph's remote, or undefined. A graph's `repo` is shown to every
 * agent of its tasks (`baton api context`), so credentials in it would reach them: the worker's own
 * SSH keys or credential helper reach a remote that needs them.
 */
export function remoteRepoProblem(repo: string): string | undefined {
  const allowed = REMOTE_PROTOCOLS.join(', ');
  if (HELPER_FORM.test(repo)) return `git transport ${repo.slice(0, repo.indexOf('::'))}:: is not allowed: use a URL (${allowed})`;
  const scheme = URL_FORM.exec(repo)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    const host = SCP_FORM.exec(repo)?.[1] ?? '';
    return host.startsWith('-') ? `host ${JSON.stringify(host)} starts with '-'` : undefined;
  }
  if (!(REMOTE_PROTOCOLS as readonly string[]).includes(scheme)) return `git transport ${scheme}:// is not allowed (${allowed})`;
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    return `${JSON.stringify(repo)} is not a URL`;
  }
  if (url.password) {
    return 'it holds a password or token, which every agent of the graph would read: give the workers a credential helper or SSH key instead';
  }
  if (url.hostname.startsWith('-')) return `host ${JSON.stringify(url.hostname)} starts with '-'`;
  return undefined;
}
