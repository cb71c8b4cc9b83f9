/** `text` as one word for a POSIX shell: in single quotes, each single quote inside spelled `'\''`. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
