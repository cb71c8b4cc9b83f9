// The host team's own activities, as they were before baton joined their worker.
export async function composeGreeting(name: string): Promise<string> {
  return `Hello, ${name}!`;
}
