/** A sample's key as `name{label="value",...}` with its labels sorted, as `samples` keys them. */
export function sampleKey(name: string, labels: Record<string, string> = {}): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return pairs.length ? `${name}{${pairs.join(',')}}` : name;
}

/** The samples of a Prometheus text exposition, by `sampleKey`; comment lines are skipped. */
export function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1]!,
        JSON.parse(`"${m[2]}"`) as string,
      ]),
    );
    found.set(sampleKey(match[1]!, labels), Number(match[3]));
  }
  return found;
}

/** A Prometheus server of the test's own, scraping `targets` every second. */
export interface PrometheusServer {
  url: string;
  /** Evaluates `expr` now: its result, or Prometheus's error. */
  query(expr: string): Promise<{ status: string; error?: string; data?: { resultType: string; result: unknown[] } }>;
  stop(): Promise<void>;
}

/**
 * Starts Debian's `prometheus` (installed by .ci/run) with a fresh data folder, scraping each of
 * `targets` (`host:port`) every second as job `baton`; fails with the install hint when it is missing.
 */
export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  const [{ spawn }, { mkdtemp, rm, writeFile }, { tmpdir }, path, { freePort }, { waitFor }] = await Promise.all([
    import('node:child_process'),
    import('node:fs/promises'),
    import('node:os'),
    import('node:path'),
    import('../../src/dev/freePort.js'),
    import('../../src/dev/waitFor.js'),
  ]);
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-prometheus-'));
  const config = path.join(dir, 'prometheus.yml');
  await writeFile(
    config,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: baton\n    static_configs:\n      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]\n`,
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const spawnError = new Promise<Error>((resolve) =>
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve(
        error.code === 'ENOENT' ? new Error('prometheus is not installed: `apt-get install prometheus` (.ci/run installs it)') : error,
      ),
    ),
  );
  let failed: Error | undefined;
  void spawnError.then((error) => (failed = error));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await rm(dir, { recursive: true, force: true });
  };
  await waitFor(
    'prometheus to be ready',
    async () => {
      const response = await fetch(`${url}/-/ready`);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
    },
    {
      timeoutMs: 600_000,
      intervalMs: 100,
      abort: () => failed ?? (child.exitCode !== null ? new Error(`prometheus exited (${child.exitCode}):\n${stderr}`) : undefined),
    },
  ).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return {
    url,
    query: async (expr) => (await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)).json() as never,
    stop,
  };
}
