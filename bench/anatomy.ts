import type pg from 'pg';
import { round } from './stats.js';

interface PlanNode {
  'Node Type'?: string;
  'Actual Total Time'?: number;
  'WAL Bytes'?: number;
  'WAL Records'?: number;
  'WAL FPI'?: number;
  Plans?: PlanNode[];
}

interface ExplainNotice {
  'Query Text': string;
  Plan: PlanNode;
  Triggers?: Array<{ 'Trigger Name': string; Relation?: string; Time: number; Calls: number }>;
  'Execution Time'?: number;
}

export interface StatementCost {
  statement: string;
  callsPerOp: number;
  msPerOp: number;
  walBytesPerOp: number;
}

/**
 * Where one operation's time and WAL go, statement by statement, including the statements a
 * PL/pgSQL function runs and the triggers they fire: `auto_explain` (loaded into this session
 * only, nested statements, ANALYZE + WAL) reports each as a notice. Its own overhead inflates the
 * times; the shares are what it is for.
 */
export async function statementAnatomy(
  conn: pg.ClientBase,
  operations: number,
  run: (i: number) => Promise<void>,
): Promise<{ statements: StatementCost[]; triggers: StatementCost[] }> {
  const notices: ExplainNotice[] = [];
  const onNotice = (n: { message?: string }) => {
    const text = n.message ?? '';
    const json = text.indexOf('{');
    if (!text.startsWith('duration:') || json < 0) return;
    try {
      notices.push(JSON.parse(text.slice(json)) as ExplainNotice);
    } catch {
      // Not an auto_explain plan.
    }
  };
  await conn.query("LOAD 'auto_explain'");
  for (const setting of [
    'auto_explain.log_min_duration = 0',
    'auto_explain.log_analyze = on',
    'auto_explain.log_wal = on',
    'auto_explain.log_triggers = on',
    'auto_explain.log_nested_statements = on',
    'auto_explain.log_timing = on',
    "auto_explain.log_format = 'json'",
    "auto_explain.log_level = 'notice'",
    "client_min_messages = 'notice'",
  ]) {
    await conn.query(`SET ${setting}`);
  }
  conn.on('notice', onNotice);
  try {
    for (let i = 0; i < operations; i++) await run(i);
  } finally {
    conn.off('notice', onNotice);
    await conn.query('SET auto_explain.log_min_duration = -1');
    await conn.query("SET client_min_messages = 'warning'");
  }
  const byStatement = new Map<string, { calls: number; ms: number; wal: number }>();
  const byTrigger = new Map<string, { calls: number; ms: number; wal: number }>();
  const add = (map: typeof byStatement, key: string, ms: number, wal: number, calls = 1) => {
    const entry = map.get(key) ?? { calls: 0, ms: 0, wal: 0 };
    entry.calls += calls;
    entry.ms += ms;
    entry.wal += wal;
    map.set(key, entry);
  };
  for (const n of notices) {
    const statement = n['Query Text'].replace(/\s+/g, ' ').trim().slice(0, 110);
    add(byStatement, statement, n['Execution Time'] ?? n.Plan['Actual Total Time'] ?? 0, n.Plan['WAL Bytes'] ?? 0);
    for (const t of n.Triggers ?? []) add(byTrigger, `${t['Trigger Name']} on ${t.Relation ?? '?'}`, t.Time, 0, t.Calls);
  }
  const costs = (map: typeof byStatement) =>
    [...map]
      .map(([statement, c]) => ({
        statement,
        callsPerOp: round(c.calls / operations, 2),
        msPerOp: round(c.ms / operations, 4),
        walBytesPerOp: round(c.wal / operations, 1),
      }))
      .sort((a, b) => b.msPerOp - a.msPerOp);
  return { statements: costs(byStatement), triggers: costs(byTrigger) };
}
