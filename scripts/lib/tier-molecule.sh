# shellcheck shell=bash
# The molecule tier of scripts/test-all.sh: every scenario under molecule/ in podman containers
# built from a local Debian image (no registry needed). See molecule/README.md.
#
#   RDMAOPS_MOLECULE_SCENARIOS="tuning harness"   run only these scenarios (default: all)
#   RDMAOPS_MOLECULE_LANES=1                      one scenario at a time (default: 2 at once)
#
# Needs root (rootful podman, debootstrap) and bootstrap() from scripts/lib/bootstrap.sh
# (the virtualenv on PATH, this checkout linked as build/collections/.../rdmaops/roce).

tier_molecule() {
  ensure_apt podman runc conmon containernetworking-plugins debootstrap gnupg
  # Podman's defaults fail on our CI machines; the project's containers.conf fixes that
  # without touching /etc (molecule.yml passes the same file to ansible and testinfra).
  export CONTAINERS_CONF="$REPO_ROOT/molecule/shared/containers.conf"
  export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 PY_COLORS=0

  local -a scenarios=() failed=() timings=()
  local file name start rc
  if [ -n "${RDMAOPS_MOLECULE_SCENARIOS:-}" ]; then
    read -r -a scenarios <<<"$RDMAOPS_MOLECULE_SCENARIOS"
  else
    for file in "$REPO_ROOT"/molecule/*/molecule.yml; do
      [ -e "$file" ] || continue
      scenarios+=("$(basename "$(dirname "$file")")")
    done
  fi
  if [ "${#scenarios[@]}" -eq 0 ]; then
    echo "no molecule scenarios"
    return 0
  fi

  start=$SECONDS
  bash "$REPO_ROOT/molecule/shared/build-image.sh"
  timings+=("$(printf '  %-20s %5ss' "(base image)" "$((SECONDS - start))")")
  for name in "${scenarios[@]}"; do
    [ -f "$REPO_ROOT/molecule/$name/molecule.yml" ] || { echo "no scenario molecule/$name" >&2; return 2; }
  done

  # Scenarios run in RDMAOPS_MOLECULE_LANES lanes at once (default 2), longest first, each lane taking
  # the next scenario when its own ends. A scenario spends about half its time waiting on apt, dpkg
  # and systemd inside its container, so two at once keep both cores busy. Each scenario's output goes
  # to build/molecule-logs/NAME.log and is printed, in order, when all are done; a line says when
  # each one ends.
  local dir="${BUILD_DIR:-$REPO_ROOT/build}/molecule-logs" lanes="${RDMAOPS_MOLECULE_LANES:-2}" lane took rc_file
  local -a pids=()
  rm -rf "$dir"
  mkdir -p "$dir"
  _molecule_by_cost "${scenarios[@]}" > "$dir/queue"
  log "molecule scenarios, $lanes at once: $(tr '\n' ' ' < "$dir/queue")"
  start=$SECONDS
  for ((lane = 1; lane <= lanes; lane++)); do
    _molecule_lane "$dir" &
    pids+=($!)
  done
  for lane in "${pids[@]}"; do wait "$lane" || true; done

  while read -r name; do
    log "molecule scenario: $name"
    cat "$dir/$name.log" 2>/dev/null || echo "scenario $name left no output"
  done < <(_molecule_by_cost "${scenarios[@]}")
  while read -r name; do
    rc_file="$dir/$name.time"
    read -r took rc < "$rc_file" 2>/dev/null || { took='?'; rc='?'; }
    [ "$rc" = 0 ] || failed+=("$name")
    timings+=("$(printf '  %-20s %5ss %s' "$name" "$took" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (rc=$rc)")")")
  done < <(_molecule_by_cost "${scenarios[@]}")
  timings+=("$(printf '  %-20s %5ss' "(all, $lanes at once)" "$((SECONDS - start))")")

  log "molecule scenarios"
  printf '%s\n' "${timings[@]}"
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "failed scenarios: ${failed[*]}" >&2
    return 1
  fi
}

# Scenarios by their usual time on a 2-core machine, longest first (the lanes then end together);
# a scenario not listed goes last.
MOLECULE_COST_ORDER=(ofed_doca ofed_mlnx nic_mtu ofed_inbox harness tuning)

# _molecule_by_cost NAME...: the names, one per line, in MOLECULE_COST_ORDER, the others after them.
_molecule_by_cost() {
  local name known
  for known in "${MOLECULE_COST_ORDER[@]}"; do
    for name in "$@"; do [ "$name" != "$known" ] || echo "$name"; done
  done
  for name in "$@"; do
    [[ " ${MOLECULE_COST_ORDER[*]} " == *" $name "* ]] || echo "$name"
  done
}

# _molecule_lane DIR: take the first name off DIR/queue (under a lock) and run `molecule test` for it,
# until the queue is empty; NAME's output to DIR/NAME.log, "SECONDS RC" to DIR/NAME.time.
_molecule_lane() {
  local dir=$1 name start rc
  while :; do
    # shellcheck disable=SC2016  # expanded by sh; a lock file of its own (sed -i replaces the queue)
    name=$(flock "$dir/queue.lock" sh -c 'head -n 1 "$1"; sed -i 1d "$1"' _ "$dir/queue")
    [ -n "$name" ] || return 0
    start=$SECONDS
    rc=0
    (cd "$REPO_ROOT" && molecule test -s "$name") > "$dir/$name.log" 2>&1 || rc=$?
    echo "$((SECONDS - start)) $rc" > "$dir/$name.time"
    log "molecule scenario $name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (rc=$rc)") in $((SECONDS - start)) s"
  done
}
