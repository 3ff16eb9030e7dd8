# shellcheck shell=bash
# The molecule tier of scripts/test-all.sh: every scenario under molecule/ in podman containers
# built from a local Debian image (no registry needed). See molecule/README.md.
#
#   RDMAOPS_MOLECULE_SCENARIOS="tuning harness"   run only these scenarios (default: all)
#   RDMAOPS_MOLECULE_LANES=1                      one scenario at a time (default: 2 at once)
#
# Needs root (rootful podman, debootstrap) and bootstrap() from scripts/lib/bootstrap.sh
# (the virtualenv on PATH, this checkout linked as build/collections/.../rdmaops/roce).

# shellcheck source=scripts/lib/lanes.sh
source "$(dirname "${BASH_SOURCE[0]}")/lanes.sh"

tier_molecule() {
  local lanes="${RDMAOPS_MOLECULE_LANES:-2}"
  [[ $lanes =~ ^[1-9][0-9]*$ ]] || { echo "RDMAOPS_MOLECULE_LANES: a whole number of scenarios at once, 1 or more (not '$lanes')" >&2; return 2; }
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
  # the next scenario when its own ends (scripts/lib/lanes.sh). A scenario spends about half its time
  # waiting on apt, dpkg and systemd inside its container, so two at once keep both cores busy. Each
  # scenario's output goes to build/molecule-logs/NAME.log and is printed, in order, when all are
  # done; a line says when each one ends.
  local dir="${BUILD_DIR:-$REPO_ROOT/build}/molecule-logs" took
  local -a ordered=()
  mapfile -t ordered < <(_molecule_by_cost "${scenarios[@]}")
  log "molecule scenarios, $lanes at once: ${ordered[*]}"
  start=$SECONDS
  lanes_run "$dir" "$lanes" "molecule scenario" _molecule_test "${ordered[@]}"
  lanes_print "$dir" "molecule scenario" "${ordered[@]}"
  for name in "${ordered[@]}"; do
    read -r took rc < <(lanes_result "$dir" "$name")
    [ "$rc" = 0 ] || failed+=("$name")
    timings+=("$(printf '  %-20s %5ss %s' "$name" "$took" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (rc=$rc)")")")
  done
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

# _molecule_test NAME: one scenario, from the checkout (a job of the lanes above)
_molecule_test() {
  cd "$REPO_ROOT"
  molecule test -s "$1"
}
