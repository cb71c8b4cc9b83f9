/** A line-oriented progress sink; the CLI prints to stderr, tests collect lines. */
export type Log = (line: string) => void;

export const stderrLog: Log = (line) => process.stderr.write(`${line}\n`);

export const silentLog: Log = () => {};
