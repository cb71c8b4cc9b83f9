// A shared object two agents write: a release plan. The role of writer moves in one step and
// never waits; a write names the version read and the token held, so the writer that lost the role
// is refused with the reason, and the refusal is on the object's record.
//
//   npx baton migrate   # once per database
//   DATABASE_URL=postgres://... npx tsx examples/shared-object.ts
import { randomUUID } from 'node:crypto';
import {
  createObject,
  createPool,
  grantObjectAccess,
  objectLog,
  readObject,
  StaleWriteError,
  takeObject,
  writeObject,
} from '@batonhq/baton';

const db = createPool(process.env.DATABASE_URL!);
// Identities come from each caller's own configuration or token, never from content (T5).
const [planner, reviewer] = ['planner', 'reviewer'];
const key = `release-plan-${randomUUID().slice(0, 8)}`;

await createObject(db, planner, { key, content: '1. tag\n' });
await grantObjectAccess(db, planner, { key, grantee: reviewer, access: 'write' });

const held = await takeObject(db, planner, { key, reason: 'drafting' });
const draft = await readObject(db, planner, { key });
await writeObject(db, planner, { key, version: draft.version, token: held.token, content: `${draft.content}2. build\n` });

// The reviewer takes over; the planner's next write, on its old token, is refused.
await takeObject(db, reviewer, { key, reason: 'review' });
let refusal: string | undefined;
try {
  await writeObject(db, planner, { key, version: draft.version + 1, token: held.token, content: 'late edit\n' });
} catch (error) {
  if (!(error instanceof StaleWriteError)) throw error;
  refusal = error.reason;
}

const final = await readObject(db, reviewer, { key });
const log = await objectLog(db, reviewer, { key });
console.log(JSON.stringify({ content: final.content, version: final.version, refusal, events: log.map((e) => e.kind) }));
await db.end();
