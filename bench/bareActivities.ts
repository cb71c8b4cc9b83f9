/** The bare baseline's activities: nothing to do, so what is measured is Temporal's own cost. */
export function createBareActivities() {
  return {
    async noop(): Promise<void> {},
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
