import type { Client } from '@temporalio/client';
import { quantile, round } from './stats.js';

type HistoryEvent = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>[number];

/** Where one workflow's time went, from its own history (server timestamps). */
export interface HistorySummary {
  events: number;
  workflowTasks: number;
  /** Workflow tasks that timed out: on a sticky queue, a worker that did not take it in time (the next one replays the whole history). */
  workflowTaskTimeouts: number;
  activities: number;
  /** First event to last event. */
  spanMs: number;
  /** Sum over workflow tasks: scheduled -> started (waiting for a worker, incl. sticky queue waits). */
  workflowTaskWaitMs: number;
  /** Sum over workflow tasks: started -> completed (the worker running workflow code). */
  workflowTaskRunMs: number;
  /** Sum over activities: scheduled -> started (waiting in the task queue). */
  activityWaitMs: number;
  /** Sum over activities: started -> closed (the activity itself, incl. its database calls). */
  activityRunMs: number;
  /** Activities by type, in order of scheduling. */
  activityTypes: string[];
}

/** A history event's time in epoch milliseconds (NaN without one). */
export function eventTimeMs(time: HistoryEvent['eventTime']): number {
  if (!time) return NaN;
  const seconds = time.seconds as unknown as { toNumber?: () => number } | number | null | undefined;
  const s = typeof seconds === 'object' && seconds?.toNumber ? seconds.toNumber() : Number(seconds ?? 0);
  return s * 1000 + (time.nanos ?? 0) / 1e6;
}

const eventId = (e: HistoryEvent) => Number(e.eventId);

/** Summarises the history of `workflowId` (its latest run). */
export async function summariseHistory(client: Client, workflowId: string): Promise<HistorySummary & { startMs: number; endMs: number }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const at = new Map(events.map((e) => [eventId(e), eventTimeMs(e.eventTime)]));
  const summary: HistorySummary & { startMs: number; endMs: number } = {
    events: events.length,
    workflowTasks: 0,
    workflowTaskTimeouts: 0,
    activities: 0,
    spanMs: 0,
    workflowTaskWaitMs: 0,
    workflowTaskRunMs: 0,
    activityWaitMs: 0,
    activityRunMs: 0,
    activityTypes: [],
    startMs: eventTimeMs(events[0]?.eventTime),
    endMs: eventTimeMs(events.at(-1)?.eventTime),
  };
  summary.spanMs = summary.endMs - summary.startMs;
  for (const e of events) {
    const t = eventTimeMs(e.eventTime);
    if (e.workflowTaskStartedEventAttributes) {
      summary.workflowTasks++;
      summary.workflowTaskWaitMs += t - (at.get(Number(e.workflowTaskStartedEventAttributes.scheduledEventId)) ?? t);
    } else if (e.workflowTaskCompletedEventAttributes || e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes) {
      if (e.workflowTaskTimedOutEventAttributes) summary.workflowTaskTimeouts++;
      const a = e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes ?? e.workflowTaskTimedOutEventAttributes!;
      summary.workflowTaskRunMs += t - (at.get(Number(a.startedEventId)) ?? t);
    } else if (e.activityTaskScheduledEventAttributes) {
      summary.activities++;
      summary.activityTypes.push(e.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
    } else if (e.activityTaskStartedEventAttributes) {
      summary.activityWaitMs += t - (at.get(Number(e.activityTaskStartedEventAttributes.scheduledEventId)) ?? t);
    } else if (e.activityTaskCompletedEventAttributes || e.activityTaskFailedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes!;
      summary.activityRunMs += t - (at.get(Number(a.startedEventId)) ?? t);
    } else if (e.activityTaskTimedOutEventAttributes) {
      const startedAt = at.get(Number(e.activityTaskTimedOutEventAttributes.startedEventId));
      if (startedAt !== undefined) summary.activityRunMs += t - startedAt;
    }
  }
  return summary;
}

const SUMMARY_FIELDS = [
  'events',
  'workflowTasks',
  'workflowTaskTimeouts',
  'activities',
  'spanMs',
  'workflowTaskWaitMs',
  'workflowTaskRunMs',
  'activityWaitMs',
  'activityRunMs',
] as const;

/** The median of each HistorySummary figure over the histories of `workflowIds`, read one after another. */
export async function medianHistory(client: Client, workflowIds: string[]): Promise<Record<(typeof SUMMARY_FIELDS)[number], number>> {
  const summaries: HistorySummary[] = [];
  for (const id of workflowIds) summaries.push(await summariseHistory(client, id));
  return Object.fromEntries(
    SUMMARY_FIELDS.map((f) => [
      f,
      round(
        quantile(
          summaries.map((s) => s[f]),
          0.5,
        ),
        1,
      ),
    ]),
  ) as Record<(typeof SUMMARY_FIELDS)[number], number>;
}
