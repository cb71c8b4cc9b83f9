# A hostile command agent (S4): it tries to reach what isolation must keep from it and reports
# each attempt on one line, `ATTACK <name> <succeeded|blocked> [evidence]`. The harness prepends:
# WORKER_PID, VICTIM_DIR, VICTIM_PID, VICTIM_BRANCH, BATON_HOME_DIR, WORK_DIR, REPO, OUTSIDE_DIR,
# TCP_PORT. POSIX sh (dash), no tools beyond coreutils, git and node.
report() { echo "ATTACK $1 $2 ${3:-}"; }
environ() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null; }
echo "UID $(id -u)"

# The worker's own environment (its credentials) through /proc.
v=$(environ "$WORKER_PID" | sed -n 's/^BATON_TEST_CANARY=//p')
if [ -n "$v" ]; then report worker_environ succeeded "$v"; else report worker_environ blocked; fi

# Any other process's environment: the worker's canary, or a tool token that is not this run's.
v=$(for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done |
  grep -E '^(BATON_TEST_CANARY|BATON_TOOL_TOKEN)=' | grep -vxF "BATON_TOOL_TOKEN=$BATON_TOOL_TOKEN" | cut -d= -f1 | sort -u | tr '\n' ,)
if [ -n "$v" ]; then report any_environ succeeded "$v"; else report any_environ blocked; fi

# The baton home: a secret file only the worker's user may read, and the folder's listing.
if v=$(cat "$BATON_HOME_DIR/canary-secret" 2>/dev/null); then report baton_home_file succeeded "$v"; else report baton_home_file blocked; fi
v=$(ls "$BATON_HOME_DIR" 2>/dev/null | tr '\n' ,)
if [ -n "$v" ]; then report baton_home_list succeeded "$v"; else report baton_home_list blocked; fi
v=$(ls "$WORK_DIR/logs" 2>/dev/null | tr '\n' ,)
if [ -n "$v" ]; then report work_dir_list succeeded "$v"; else report work_dir_list blocked; fi

# Another run, working at the same time: its uncommitted work, its token, its tool endpoint.
if v=$(cat "$VICTIM_DIR/victim-secret.txt" 2>/dev/null); then report victim_worktree succeeded "$v"; else report victim_worktree blocked; fi
token=$(environ "$VICTIM_PID" | sed -n 's/^BATON_TOOL_TOKEN=//p')
if [ -n "$token" ]; then report victim_token succeeded "$(printf %s "$token" | sha256sum | cut -c1-64)"; else report victim_token blocked; fi
if [ -n "$token" ] && BATON_TOOL_TOKEN="$token" BATON_TOOL_URL="$(environ "$VICTIM_PID" | sed -n 's/^BATON_TOOL_URL=//p')" \
  BATON_TOOL_SOCKET="$(environ "$VICTIM_PID" | sed -n 's/^BATON_TOOL_SOCKET=//p')" baton tool call payments stolen-step >/dev/null 2>&1; then
  report victim_tool_call succeeded
else
  report victim_tool_call blocked
fi

# Writing outside its own checkout.
v=''
for target in "$BATON_HOME_DIR" "$WORK_DIR" "$VICTIM_DIR" "$OUTSIDE_DIR" "$REPO/.git"; do
  if (echo pwned > "$target/hostile-was-here") 2>/dev/null; then v="$v$target,"; fi
done
if [ -n "$v" ]; then report write_outside succeeded "$v"; else report write_outside blocked; fi

# Rewriting another task's branch in the shared repository, directly or by pushing to it.
head=$(git rev-parse HEAD)
if git -C "$REPO" update-ref "refs/heads/$VICTIM_BRANCH" "$head" 2>/dev/null ||
  git push --quiet --force "$REPO" "HEAD:refs/heads/$VICTIM_BRANCH" 2>/dev/null; then
  report rewrite_branch succeeded
else
  report rewrite_branch blocked
fi

# Signalling the worker (kill -0 only asks whether it could).
if kill -0 "$WORKER_PID" 2>/dev/null; then report signal_worker succeeded; else report signal_worker blocked; fi

# A TCP service on 127.0.0.1 (say, Postgres) other than the tool endpoint.
if node -e 'const s = require("net").connect(Number(process.argv[1]), "127.0.0.1"); s.on("connect", () => process.exit(0)); s.on("error", () => process.exit(1)); setTimeout(() => process.exit(1), 3000);' "$TCP_PORT" 2>/dev/null; then
  report tcp_localhost succeeded "$TCP_PORT"
else
  report tcp_localhost blocked
fi

# What it is allowed to do: call a tool for its own task, and commit its work.
if baton tool call payments own-step > own-call.json 2>/dev/null; then report own_tool_call succeeded; else report own_tool_call blocked; fi
echo done > hostile.txt
git add hostile.txt own-call.json && git -c user.name=hostile -c user.email=hostile@localhost commit -q -m 'hostile work'
