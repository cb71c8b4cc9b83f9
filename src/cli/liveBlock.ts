// Progress a terminal redraws in place (a graph's task table as it changes), with the command's
// other lines printed above it; when the output is not a terminal, plain lines, as a log wants.
import type { Log } from '../log.js';

/** A block of lines kept at the bottom of the output, and the lines logged above it. */
export interface LiveBlock {
  /** A line printed above the block, which stays where it is. */
  log: Log;
  /** Replaces the block with `text`: redrawn in place on a terminal, printed after what came before elsewhere. */
  show(text: string): void;
  /** Takes the block away (on a terminal; elsewhere what was printed stays). */
  clear(): void;
}

/** What a live block writes to: a TTY's size is known; anything else is written line by line. */
export interface LiveOutput {
  isTTY?: boolean;
  rows?: number;
  columns?: number;
  write(text: string): unknown;
}

/** A live block on `output` (such as process.stderr). */
export function liveBlock(output: LiveOutput): LiveBlock {
  const print = (text: string) => output.write(`${text}\n`);
  if (!output.isTTY) return { log: print, show: print, clear: () => undefined };
  let block = '';
  /** Screen rows the block takes now (0: nothing to erase). */
  let shown = 0;
  const rowsOf = (text: string) =>
    text.split('\n').reduce((rows, line) => rows + Math.max(1, Math.ceil(line.length / (output.columns || 80))), 0);
  const erase = () => {
    // Up to the block's first row, then clear to the end of the screen.
    if (shown) output.write(`\x1b[${shown}F\x1b[0J`);
    shown = 0;
  };
  const draw = () => {
    if (!block) return;
    print(block);
    const rows = rowsOf(block);
    // A block taller than the screen cannot be reached again to be redrawn: it stays, and the next is printed below.
    shown = rows < (output.rows || 24) ? rows : 0;
  };
  return {
    log: (line) => {
      const live = shown > 0;
      erase();
      print(line);
      if (live) draw();
    },
    show: (text) => {
      erase();
      block = text;
      draw();
    },
    clear: () => {
      erase();
      block = '';
    },
  };
}
