#!/bin/sh
# An example command agent: what a real one (a coding agent's CLI) does, in a few lines. It runs in
# its task's checkout (the base with the pinned upstream revisions merged in), reads its task through
# the agent API (`baton api context`; BATON_URL and BATON_TOKEN are set for it), does its work,
# and commits; the worker takes the commit, publishes it and has it verified by someone else.
# Use it as a task's `run: hello-agent`; `verify: test -s "$BATON_TASK_KEY.txt"` checks its work.
set -eu
: "${BATON_TASK_KEY:?run me as a baton command agent}"
echo "working on $BATON_TASK_KEY (claim v${BATON_CLAIM_VERSION:-?})"
baton api context > "$BATON_TASK_KEY.context.json"
printf 'done by the example agent for %s\n' "$BATON_TASK_KEY" > "$BATON_TASK_KEY.txt"
git add "$BATON_TASK_KEY.txt"
git -c user.name=hello-agent -c user.email=hello-agent@localhost commit -q -m "$BATON_TASK_KEY: the example agent's work"
echo "committed $(git rev-parse --short HEAD)"
