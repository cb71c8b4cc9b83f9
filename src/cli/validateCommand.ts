import type { Command } from 'commander';
import type { Log } from '../log.js';
import { jsonOption } from './options.js';

/** `baton validate <graph.yaml>`: checks a graph file offline and prints every problem with its line. */
export function registerValidateCommand(program: Command, log: Log): void {
  program
    .command('validate')
    .description(
      'check a graph file offline, as submit would but without a database, Temporal or a look at its repo: ' +
        'prints each problem as file:line:col: message; exits 2 when the graph is invalid',
    )
    .argument('<graph.yaml>', 'the graph, YAML or JSON')
    .addOption(jsonOption('the result as one JSON object: valid, then id and tasks, or problems with line, column, path and message'))
    .action(async (file: string, opts: { json?: boolean }) => {
      // Loaded here, not at the top: registering the command must cost the other commands nothing at start-up.
      const [{ validateGraphFile }, { ERROR_RESPONSES }] = await Promise.all([import('../tasks/graphFile.js'), import('../errors.js')]);
      const result = await validateGraphFile(file);
      if (!result.valid) {
        if (opts.json) process.stdout.write(`${JSON.stringify({ valid: false, problems: result.problems })}\n`);
        else for (const p of result.problems) log(`${file}:${p.line}:${p.column}: ${p.message}`);
        process.exitCode = ERROR_RESPONSES.invalid_input.exitCode;
        return;
      }
      const tasks = result.graph.tasks.length;
      const id = result.idGenerated ? null : result.graph.id;
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ valid: true, id, tasks })}\n`
          : `${file}: valid graph ${id ?? '(its id is generated when it is submitted)'} with ${tasks} task(s)\n`,
      );
    });
}
