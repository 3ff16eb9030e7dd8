# shellcheck shell=bash
# Named jobs run in lanes, for the molecule tier's scenarios (scripts/lib/tier-molecule.sh) and the
# static tiers run at once (scripts/test-all.sh): LANES jobs at a time, each lane taking the next name
# off a queue (under a lock) when its own job ends. Each job runs with errexit in a subshell of its
# own, its output to DIR/NAME.log and "SECONDS RC" to DIR/NAME.time; a line says when each one ends.
# The outputs are printed afterwards, in the order asked for, so that lanes do not interleave them.
# Needs log() (scripts/lib/bootstrap.sh) and flock. Call lanes_run as a command of its own, not in
# an `||`, `&&` or `if`: there bash ignores errexit, in the jobs' subshells too.
#
#   lanes_run DIR LANES LABEL JOB NAME...   `JOB NAME` for each NAME, started in that order, LANES at
#                                           a time (DIR is emptied first); returns once all have ended
#   lanes_print DIR LABEL NAME...           each NAME's output, in that order, under a "LABEL: NAME" line
#   lanes_result DIR NAME                   "SECONDS RC" of NAME's job, "? ?" when it recorded none

lanes_run() {
  local dir=$1 lanes=$2 label=$3 job=$4 lane
  shift 4
  local -a pids=()
  [[ $lanes =~ ^[1-9][0-9]*$ ]] || { echo "lanes_run: LANES must be a whole number, 1 or more (not '$lanes')" >&2; return 2; }
  rm -rf "$dir"
  mkdir -p "$dir"
  [ "$#" -eq 0 ] || printf '%s\n' "$@" > "$dir/queue"
  touch "$dir/queue"
  for ((lane = 1; lane <= lanes; lane++)); do
    _lanes_lane "$dir" "$label" "$job" &
    pids+=($!)
  done
  for lane in "${pids[@]}"; do wait "$lane" || true; done
}

# _lanes_lane DIR LABEL JOB: take the first name off DIR/queue and run `JOB NAME`, until the queue is
# empty. Runs in the background: errexit is off in this lane's own shell, on in each job's subshell
# (a job in an `||` or `if` would run with errexit ignored, so its status is taken afterwards).
_lanes_lane() {
  local dir=$1 label=$2 job=$3 name start rc
  set +e
  while :; do
    # shellcheck disable=SC2016  # expanded by sh; a lock file of its own (sed -i replaces the queue)
    name=$(flock "$dir/queue.lock" sh -c 'head -n 1 "$1"; sed -i 1d "$1"' _ "$dir/queue")
    [ -n "$name" ] || return 0
    start=$SECONDS
    (set -e; "$job" "$name") > "$dir/$name.log" 2>&1
    rc=$?
    echo "$((SECONDS - start)) $rc" > "$dir/$name.time"
    log "$label $name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (rc=$rc)") in $((SECONDS - start)) s"
  done
}

lanes_print() {
  local dir=$1 label=$2 name
  shift 2
  for name in "$@"; do
    log "$label: $name"
    cat "$dir/$name.log" 2>/dev/null || echo "$label $name left no output"
  done
}

lanes_result() {
  cat "$1/$2.time" 2>/dev/null || echo '? ?'
}
