import { describe, expect, it } from 'vitest';
import { graphOf, isTaskId, keyOf, taskIdOf } from '../../src/tasks/taskId.js';

describe('task ids', () => {
  it('are <graph>/<key>, and split back into both', () => {
    const id = taskIdOf('sdk-2', 'tests');
    expect(id).toBe('sdk-2/tests');
    expect(isTaskId(id)).toBe(true);
    expect(graphOf(id)).toBe('sdk-2');
    expect(keyOf(id)).toBe('tests');
  });

  it('tell a graph id apart from a task id', () => {
    expect(isTaskId('sdk-2')).toBe(false);
    expect(graphOf('sdk-2')).toBe('sdk-2');
    expect(keyOf('sdk-2')).toBeUndefined();
  });

  it('split at the first slash', () => {
    expect(graphOf('g/a/b')).toBe('g');
    expect(keyOf('g/a/b')).toBe('a/b');
    expect(keyOf('g/')).toBe('');
  });
});
