import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeWorkflowBundle } from '../src/dev/workflowBundle.js';
import { workflowsPath } from '../src/worker.js';

const BARE_WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));

export interface Bundles {
  /** baton's own workflows (workflows/), as `baton worker` runs them. */
  baton: string;
  /** The bench's bare workflow, in a bundle of its own. */
  bare: string;
}

/** Bundles both workflow sets once per run into `dir`; worker processes load the files. */
export async function buildBundles(dir: string): Promise<Bundles> {
  await mkdir(dir, { recursive: true });
  const out = async (name: string, workflows: string) => {
    const file = path.join(dir, `${name}-workflows.js`);
    return writeWorkflowBundle(file, workflows);
  };
  return { baton: await out('baton', workflowsPath), bare: await out('bare', BARE_WORKFLOWS_PATH) };
}
