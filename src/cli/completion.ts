// `baton completion bash|zsh`: a completion script written from the command tree itself, so it
// always offers the commands, options and choices this version of baton has.
import type { Command } from 'commander';
import { shellQuote } from '../shellQuote.js';

/** The shells `baton completion` writes a script for. */
export const COMPLETION_SHELLS = ['bash', 'zsh'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** One command of the tree: its path (`' token create'`), what may follow it, and option values with choices. */
interface CommandWords {
  path: string;
  /** Subcommands, options, and the choices of its arguments. */
  words: string[];
  /** Options that take a value, with the choices of that value (none: any value, so nothing is offered). */
  values: Map<string, readonly string[]>;
}

function commandWords(command: Command, path: string): CommandWords[] {
  const values = new Map<string, readonly string[]>();
  const words = [...command.commands.map((c) => c.name())];
  for (const option of command.options) {
    words.push(...[option.long, option.short].filter((flag): flag is string => Boolean(flag)));
    if (option.required || option.optional)
      for (const flag of [option.long, option.short]) if (flag) values.set(flag, option.argChoices ?? []);
  }
  words.push('--help');
  for (const argument of command.registeredArguments) words.push(...(argument.argChoices ?? []));
  return [{ path, words, values }, ...command.commands.flatMap((c) => commandWords(c, `${path} ${c.name()}`))];
}

/** The completion script for `shell`, for the tree under `program`. */
export function completionScript(program: Command, shell: CompletionShell): string {
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, '_')}_completion`;
  const tree = commandWords(program, '');
  const paths = tree.filter((c) => c.path).map((c) => shellQuote(c.path));
  const valueCases = tree.flatMap((c) =>
    [...c.values].map(([flag, choices]) => `    ${shellQuote(`${c.path}|${flag}`)}) words=${shellQuote(choices.join(' '))} ;;`),
  );
  const wordCases = tree.map((c) => `    ${shellQuote(c.path)}) words=${shellQuote(c.words.join(' '))} ;;`);
  const lines = [
    `# ${name} completion for ${shell}, written by \`${name} completion ${shell}\` from this version's commands.`,
    `# Load it in this shell: source <(${name} completion ${shell}); or save it where your shell loads completions.`,
    // zsh runs bash completions through bashcompinit (which needs compinit), its arrays counted from 0 as in bash.
    ...(shell === 'zsh'
      ? ['(( ${+functions[compdef]} )) || { autoload -U +X compinit && compinit -u; }', 'autoload -U +X bashcompinit && bashcompinit']
      : []),
    `${fn}() {`,
    ...(shell === 'zsh' ? ['  emulate -L ksh'] : []),
    '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path="" words i',
    '  # The command path so far: the words that name a command, each within the one before.',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    case "$path ${COMP_WORDS[i]}" in',
    ...(paths.length ? [`      ${paths.join('|')}) path="$path ${'$'}{COMP_WORDS[i]}" ;;`] : []),
    '    esac',
    '  done',
    '  # The value of an option: its choices, or nothing offered (the shell completes file names).',
    '  case "$path|$prev" in',
    ...valueCases,
    '    *)',
    '      case "$path" in',
    ...wordCases.map((l) => `    ${l}`),
    '      esac ;;',
    '  esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    `complete -o default -F ${fn} ${name}`,
  ];
  return `${lines.join('\n')}\n`;
}
