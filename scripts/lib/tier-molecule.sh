# shellcheck shell=bash
# The molecule tier of scripts/test-all.sh: every scenario under molecule/ in podman containers
# built from a local Debian image (no registry needed). See molecule/README.md.
#
#   RDMAOPS_MOLECULE_SCENARIOS="tuning harness"   run only these scenarios (default: all)
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
    log "molecule scenario: $name"
    start=$SECONDS
    rc=0
    (cd "$REPO_ROOT" && molecule test -s "$name") || rc=$?
    [ "$rc" -eq 0 ] || failed+=("$name")
    timings+=("$(printf '  %-20s %5ss %s' "$name" "$((SECONDS - start))" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (rc=$rc)")")")
  done

  log "molecule scenarios"
  printf '%s\n' "${timings[@]}"
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "failed scenarios: ${failed[*]}" >&2
    return 1
  fi
}
