// SPEC U6: baton's workflows carry these search attributes, so Temporal's UI and CLI can list a
// graph's workflows (`BatonGraphId = "g1"`), find a task's, and filter by status. A namespace must
// have them registered before any workflow sets them (a workflow setting an unknown one fails its
// task), so workflows set them only when the starter found them registered, and say so in their input.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { graphOf, keyOf } from '../tasks/taskId.js';

export const GRAPH_ID_ATTRIBUTE = defineSearchAttributeKey('BatonGraphId', SearchAttributeType.KEYWORD);
export const TASK_KEY_ATTRIBUTE = defineSearchAttributeKey('BatonTaskKey', SearchAttributeType.KEYWORD);
export const TASK_STATUS_ATTRIBUTE = defineSearchAttributeKey('BatonTaskStatus', SearchAttributeType.KEYWORD);

/** Every search attribute baton's workflows set, with its type (what a namespace registers). */
export const BATON_SEARCH_ATTRIBUTES = [GRAPH_ID_ATTRIBUTE, TASK_KEY_ATTRIBUTE, TASK_STATUS_ATTRIBUTE];

/**
 * What a task's workflow is started with (at submit, by a wake or a rerun), when its
 * namespace has baton's search attributes: its graph and key and, when given, its status (`ready`
 * for a task Postgres has just made ready), part of the start, costing no command of their own.
 * Later statuses the workflow sets itself as they change.
 */
export function taskSearchAttributes(
  taskId: string,
  registered: boolean | undefined,
  status?: string,
): { typedSearchAttributes?: SearchAttributePair[] } {
  if (!registered) return {};
  return {
    typedSearchAttributes: [
      { key: GRAPH_ID_ATTRIBUTE, value: graphOf(taskId) },
      { key: TASK_KEY_ATTRIBUTE, value: keyOf(taskId) ?? taskId },
      ...(status === undefined ? [] : [{ key: TASK_STATUS_ATTRIBUTE, value: status }]),
    ],
  };
}
