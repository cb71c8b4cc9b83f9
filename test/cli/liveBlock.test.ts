import { describe, expect, it } from 'vitest';
import { liveBlock } from '../../src/cli/liveBlock.js';

/**
 * A terminal's screen as far as a live block uses it: rows (long text wraps), a cursor row, `ESC[nF`
 * (up n rows, to the start of the row) and `ESC[0J` (clear from the cursor to the end of the screen).
 */
function terminal(size: { rows: number; columns: number }) {
  const lines: string[] = [];
  let row = 0;
  return {
    isTTY: true,
    ...size,
    write(text: string) {
      for (const part of text.split(/(\x1b\[\d+F|\x1b\[0J|\n)/).filter(Boolean)) {
        const up = /^\x1b\[(\d+)F$/.exec(part);
        if (up) row = Math.max(0, row - Number(up[1]));
        else if (part === '\x1b[0J') lines.length = row;
        else if (part === '\n') row++;
        else {
          // Text past the last column wraps onto the next row, as a terminal shows it.
          let rest = (lines[row] ?? '') + part;
          while (rest.length > size.columns) {
            lines[row++] = rest.slice(0, size.columns);
            rest = rest.slice(size.columns);
          }
          lines[row] = rest;
        }
      }
    },
    screen: () => lines.slice(0, row).join('\n'),
  };
}

describe('a live block', () => {
  it('on a terminal, redraws the block in place, with logged lines kept above it', () => {
    const tty = terminal({ rows: 24, columns: 80 });
    const live = liveBlock(tty);
    live.show('status: 0/2 verified\na  running\nb  ready');
    live.log('Freezing worker A');
    live.show('status: 1/2 verified\na  verified\nb  running');
    live.show('status: 2/2 verified\na  verified\nb  verified');
    expect(tty.screen()).toBe('Freezing worker A\nstatus: 2/2 verified\na  verified\nb  verified');
  });

  it('on a terminal, counts trials in one line and clears it for the line that stays (as `baton drill` does)', () => {
    const tty = terminal({ rows: 24, columns: 80 });
    const live = liveBlock(tty);
    live.show('Running D2 ...');
    for (let trial = 1; trial <= 3; trial++) live.show(`D2 trial ${trial}/3`);
    live.clear();
    live.log('D2 passed in 40 s');
    live.show('Running D3 ...');
    expect(tty.screen()).toBe('D2 passed in 40 s\nRunning D3 ...');
  });

  it('counts wrapped lines, and leaves a block taller than the screen where it is', () => {
    const wide = terminal({ rows: 24, columns: 10 });
    const live = liveBlock(wide);
    live.log('keep');
    live.show('0123456789abcdef\nx');
    live.show('done');
    expect(wide.screen()).toBe('keep\ndone');

    const short = terminal({ rows: 3, columns: 80 });
    const tall = liveBlock(short);
    tall.show('1\n2\n3\n4');
    tall.log('between');
    tall.show('5');
    // Nothing above the screen is erased: the tall block stays, the log line is not followed by a copy of it.
    expect(short.screen()).toBe('1\n2\n3\n4\nbetween\n5');
  });

  it('elsewhere (a pipe, a file), prints plain lines and no terminal codes', () => {
    let written = '';
    const live = liveBlock({ write: (text: string) => (written += text) });
    live.show('a  running');
    live.log('note');
    live.show('a  verified');
    live.clear();
    expect(written).toBe('a  running\nnote\na  verified\n');
  });
});
