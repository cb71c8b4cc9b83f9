// `npx tsx scripts/writeGraphSchema.ts`: writes the JSON Schema of graph files to
// docs/graph.schema.json, the file a test compares with graphJsonSchema().
import { writeFile } from 'node:fs/promises';
import { GRAPH_SCHEMA_PATH, graphJsonSchema } from '../src/tasks/graphSchema.js';

await writeFile(GRAPH_SCHEMA_PATH, `${JSON.stringify(graphJsonSchema(), null, 2)}\n`);
console.error(`wrote ${GRAPH_SCHEMA_PATH}`);
