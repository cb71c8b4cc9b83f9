import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/queryable.js';
import { taskClaim, claimRelease } from '../../src/db/sql/claims.js';
import { taskSetStatus } from '../../src/db/sql/graphs.js';
import { taskHeartbeat, taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { eventRead, graphReadTasks, taskRead } from '../../src/db/sql/reads.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { IllegalTransitionError, StaleClaimError } from '../../src/errors.js';
import type { TaskStatus } from '../../src/tasks/states.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { artifact, LEASE_MS } from '../helpers/tasks.js';

const db = useTestDatabase();

/** A random DAG: task i may depend only on tasks before it. */
const dagArb = fc
  .integer({ min: 2, max: 7 })
  .chain((n) =>
    fc
      .tuple(...Array.from({ length: n }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j))))
      .map((deps) => Object.fromEntries(deps.map((d, i) => [`t${i}`, d.map((j) => `t${j}`)]))),
  );
const actionArb = fc.record({
  task: fc.nat(),
  kind: fc.constantFrom('claim', 'submit', 'kill', 'verifyPass', 'verifyFail', 'retry'),
});

/** Applies one agent/verifier/recovery step through the real store, if it applies to the task's state. */
async function step(db: Queryable, taskId: string, kind: string, revision: string): Promise<void> {
  const t = await taskRead(db, taskId);
  const fence = { taskId, owner: t.owner ?? 'nobody', claimVersion: t.claimVersion };
  const verify = async (exitCode: number) => {
    const { claimVersion, artifact: a } = await verificationStart(db, taskId, 'verifier');
    await verificationRecord(db, {
      taskId,
      verifier: 'verifier',
      claimVersion,
      revision: a.revision,
      command: 'c',
      exitCode,
      outputDigest: 'd',
      outputTail: '',
    });
  };
  if (kind === 'claim' && t.status === 'ready') await taskClaim(db, taskId, `agent-${revision}`, LEASE_MS);
  else if (kind === 'submit' && t.status === 'running') await taskSubmit(db, fence, artifact(revision));
  else if (kind === 'kill' && t.status === 'running') {
    await claimRelease(db, { taskId, claimVersion: t.claimVersion, actor: 'baton', kind: 'reclaimed_after_silence', reason: 'killed' });
  } else if (kind === 'verifyPass' && t.status === 'submitted') await verify(0);
  else if (kind === 'verifyFail' && t.status === 'submitted') await verify(1);
  else if (kind === 'retry' && t.status === 'rejected') {
    await taskSetStatus(db, { taskId, actor: 'policy', to: 'ready', kind: 'rerun_after_rejection', reason: 'retry' });
  }
}

describe('D4 as a property: random DAGs, random verification failures and kills', () => {
  it('never lets a dependent leave blocked before all its dependencies are verified', async () => {
    await fc.assert(
      fc.asyncProperty(dagArb, fc.array(actionArb, { minLength: 5, maxLength: 60 }), async (deps, actions) => {
        const graphId = await insertGraph(db.pool, deps);
        const keys = Object.keys(deps);
        for (const [i, action] of actions.entries()) {
          await step(db.pool, `${graphId}/${keys[action.task % keys.length]}`, action.kind, `r${i}`);
          const tasks = await graphReadTasks(db.pool, graphId);
          const status = new Map(tasks.map((t) => [t.key, t.status]));
          for (const t of tasks) {
            if (t.status === 'blocked') continue;
            for (const d of t.dependsOn) expect(status.get(d), `${t.key} is ${t.status} while ${d} is ${status.get(d)}`).toBe('verified');
          }
        }
        // The record: per task, event numbers 1..n with no gaps, and claim versions only grow.
        for (const key of keys) {
          const events = await eventRead(db.pool, 'task', `${graphId}/${key}`);
          expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
          const claims = events.filter((e) => e.kind === 'claimed').map((e) => e.fence);
          expect(claims).toEqual(claims.map((_, i) => i + 1));
        }
      }),
      { numRuns: 40 },
    );
  });
});

/** The model of one task, as the spec describes it. */
interface Model {
  status: TaskStatus;
  owner: string | null;
  claimVersion: number;
  refusals: number;
  /** Whether the current claim's artifact was submitted (a repeat of that submit is accepted as done). */
  submitted: boolean;
}

type Real = { db: Queryable; taskId: string };

class Claim implements fc.AsyncCommand<Model, Real> {
  constructor(readonly owner: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const claim = await taskClaim(r.db, r.taskId, this.owner, LEASE_MS);
    expect(claim !== undefined).toBe(m.status === 'ready');
    if (claim) Object.assign(m, { status: 'running', owner: this.owner, claimVersion: m.claimVersion + 1, submitted: false });
    expect(claim?.claimVersion ?? m.claimVersion).toBe(m.claimVersion);
  }
  toString = () => `claim(${this.owner})`;
}

/** An owner write (heartbeat or submit) from `owner` carrying `claimVersion + lag`. */
class OwnerWrite implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly action: 'heartbeat' | 'submit',
    readonly owner: string,
    readonly lag: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const fence = { taskId: r.taskId, owner: this.owner, claimVersion: m.claimVersion - this.lag };
    const fits = m.status === 'running' && m.owner === this.owner && this.lag === 0;
    const repeat = this.action === 'submit' && m.submitted && m.status !== 'running' && m.owner === this.owner && this.lag === 0;
    const write = this.action === 'heartbeat' ? taskHeartbeat(r.db, fence, LEASE_MS) : taskSubmit(r.db, fence, artifact('x'));
    const error = await write.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (fits || repeat) {
      expect(error).toBeUndefined();
      if (fits && this.action === 'submit') Object.assign(m, { status: 'submitted', submitted: true });
    } else {
      expect(error).toBeInstanceOf(StaleClaimError);
      m.refusals++;
    }
  }
  toString = () => `${this.action}(${this.owner}, lag ${this.lag})`;
}

class Silence implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const released = await claimRelease(r.db, {
      taskId: r.taskId,
      claimVersion: m.claimVersion,
      actor: 'baton',
      kind: 'reclaimed_after_silence',
      reason: 'silent',
    });
    expect(released).toBe(m.status === 'running');
    if (released) Object.assign(m, { status: 'ready', owner: null });
  }
  toString = () => 'silence';
}

class Verify implements fc.AsyncCommand<Model, Real> {
  constructor(readonly passes: boolean) {}
  check = () => true;
  async run(m: Model, r: Real) {
    if (m.status !== 'submitted') {
      const error = await verificationStart(r.db, r.taskId, 'verifier').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(IllegalTransitionError);
      return;
    }
    await verificationStart(r.db, r.taskId, 'verifier');
    await verificationRecord(r.db, {
      taskId: r.taskId,
      verifier: 'verifier',
      claimVersion: m.claimVersion,
      revision: 'x',
      command: 'c',
      exitCode: this.passes ? 0 : 1,
      outputDigest: 'd',
      outputTail: '',
    });
    m.status = this.passes ? 'verified' : 'rejected';
  }
  toString = () => `verify(${this.passes ? 'pass' : 'fail'})`;
}

class Retry implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const error = await taskSetStatus(r.db, {
      taskId: r.taskId,
      actor: 'policy',
      to: 'ready',
      kind: 'rerun_after_rejection',
      reason: 'retry',
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const allowed = m.status === 'rejected' || m.status === 'verified' || m.status === 'ready';
    if (allowed && m.status !== 'ready') {
      expect(error).toBeUndefined();
      Object.assign(m, { status: 'ready', owner: null });
    } else if (!allowed) {
      expect(error).toBeInstanceOf(IllegalTransitionError);
    }
  }
  toString = () => 'retry';
}

describe('one task against a model of the state machine (fast-check commands)', () => {
  it('agrees with the model on every claim, fenced write, silence, verification and retry', async () => {
    const owners = fc.constantFrom('a', 'b', 'c');
    const commands = [
      owners.map((o) => new Claim(o)),
      fc
        .tuple(fc.constantFrom('heartbeat' as const, 'submit' as const), owners, fc.constantFrom(0, 0, 1))
        .map(([a, o, l]) => new OwnerWrite(a, o, l)),
      fc.constant(new Silence()),
      fc.boolean().map((p) => new Verify(p)),
      fc.constant(new Retry()),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        const graphId = await insertGraph(db.pool, { t: [] });
        // One connection, so each step starts after the last has ended. A refused call is answered
        // before its statement's row lock is let go, and the pool then drops that connection: on a
        // fresh one, a claim's SKIP LOCKED could still find the row locked and (rightly) skip it.
        const connection = await db.pool.connect();
        const real = { db: connection, taskId: `${graphId}/t` };
        const model: Model = { status: 'ready', owner: null, claimVersion: 0, refusals: 0, submitted: false };
        try {
          await fc.asyncModelRun(() => ({ model, real }), cmds);
        } finally {
          connection.release();
        }
        const task = await taskRead(db.pool, real.taskId);
        expect({ status: task.status, claimVersion: task.claimVersion }).toEqual({
          status: model.status,
          claimVersion: model.claimVersion,
        });
        const events = await eventRead(db.pool, 'task', real.taskId);
        expect(events.filter((e) => e.kind === 'stale_write_refused')).toHaveLength(model.refusals);
      }),
      { numRuns: 40 },
    );
  });
});
