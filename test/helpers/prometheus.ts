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
