#!/usr/bin/env bash
# The README's test command: every test tier, from a fresh clone on a fresh machine.
# Installs what it needs (apt packages, a virtualenv from requirements-dev.txt), then runs
# unit tests, ansible-test sanity, ansible-lint, the generated reference, the collection build,
# molecule scenarios (podman), switch_roce on a SONiC stand-in container (podman) and the soft-RoCE lab end to end (QEMU VMs), printing how long
# each tier took.
#
#   bash scripts/test-all.sh                 every tier
#   bash scripts/test-all.sh unit sanity     only the named tiers (bootstrap always runs)
#   RDMAOPS_BUILD_DIR=/tmp/x bash scripts/test-all.sh sanity   build somewhere else
set -euo pipefail
# shellcheck source=scripts/lib/bootstrap.sh
source "$(dirname "$0")/lib/bootstrap.sh"
# shellcheck source=scripts/lib/collection-tree.sh
source "$(dirname "$0")/lib/collection-tree.sh"
# shellcheck source=scripts/lib/tier-molecule.sh
source "$(dirname "$0")/lib/tier-molecule.sh"
# shellcheck source=scripts/lib/tier-lab.sh
source "$(dirname "$0")/lib/tier-lab.sh"
# shellcheck source=scripts/lib/tier-switch.sh
source "$(dirname "$0")/lib/tier-switch.sh"

BUILD_DIR="${RDMAOPS_BUILD_DIR:-$REPO_ROOT/build}"
declare -a TIMINGS=()
tier() {
  local name="$1"; shift
  local start=$SECONDS
  log "tier: $name"
  "$@"
  TIMINGS+=("$(printf '%-22s %5ss' "$name" "$((SECONDS - start))")")
}

tier_bootstrap() { bootstrap; }

tier_unit() {
  # libyang-tools: yanglint validates the SONiC driver's tables against sonic-yang-models
  ensure_apt ifupdown libyang-tools
  (cd "$REPO_ROOT" && python -m pytest -q -p no:cacheprovider)
}

tier_sanity() {
  ensure_apt shellcheck
  # ansible-test bootstraps pip in its virtualenvs with a script it downloads from a host we
  # cannot reach; it uses a cached copy when one exists, so give it ours.
  local version cache
  version="$(python - <<'PY'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
print(get_venv_packages(NativePythonConfig(version="3.11"))["pip"])
PY
)"
  cache="$HOME/.ansible/test/cache/get_pip_${version//./_}.py"
  mkdir -p "$(dirname "$cache")"
  cp "$REPO_ROOT/scripts/lib/get_pip_offline.py" "$cache"
  local tree
  tree="$(collection_tree "$BUILD_DIR/sanity")"
  # The httpapi plugin builds on ansible.netcommon (bundled in the `ansible` package): the import
  # test needs it beside the collection, as an install would have it.
  local netcommon
  netcommon="$(python -c 'import ansible_collections.ansible.netcommon as m; print(list(m.__path__)[0])')"
  mkdir -p "$BUILD_DIR/sanity/ansible_collections/ansible"
  ln -sfn "$netcommon" "$BUILD_DIR/sanity/ansible_collections/ansible/netcommon"
  # Ignore files stay empty: the collection passes every sanity test as it is.
  (cd "$tree" && ansible-test sanity --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
      --requirements --color no 2>&1 | sed "/^WARNING: Location 'file:/d" )
}

tier_lint() {
  (cd "$REPO_ROOT" && ansible-lint --profile production --strict -q)
}

tier_build() {
  local out="$BUILD_DIR/dist" tarball
  rm -rf "$out" && mkdir -p "$out"
  (cd "$REPO_ROOT" && ansible-galaxy collection build --force --output-path "$out" >/dev/null)
  tarball="$(ls "$out"/rdmaops-roce-*.tar.gz)"
  echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB, $(tar -tzf "$tarball" | wc -l) entries)"
  if tar -tzf "$tarball" | grep -E '^(tests|scripts|\.ci|build|molecule|\.venv)/'; then
    echo "the tarball carries test or development files (see build_ignore in galaxy.yml)" >&2
    return 1
  fi
  # Installed from the tarball into an empty collections path, the module documents itself.
  local install="$out/install"
  ANSIBLE_COLLECTIONS_PATH="$install" ansible-galaxy collection install --offline --force -p "$install" "$tarball" >/dev/null
  test -f "$install/ansible_collections/rdmaops/roce/plugins/modules/rdma_facts.py"
  ANSIBLE_COLLECTIONS_PATH="$install" ansible-doc rdmaops.roce.rdma_facts > "$out/rdma_facts.doc.txt"
  grep -q "rdma_facts" "$out/rdma_facts.doc.txt"
  head -n 3 "$out/rdma_facts.doc.txt"
  # Another team's playbook uses it by FQCN from there, with no view of this checkout.
  local tree="$out/consumer-host"
  python - "$tree" <<'PY'
import sys
sys.path.insert(0, "tests/unit")
import hosttree
hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), sys.argv[1])
PY
  (cd "$out" && env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$install" ANSIBLE_LOCALHOST_WARNING=0 \
      ansible-playbook -i localhost, -c local -e "ansible_python_interpreter=$(command -v python)" \
      -e "consumer_host_tree=$tree" "$REPO_ROOT/tests/consumer/playbook.yml")
  # ...and runs the collection's own site playbook by its FQCN, in check mode (the layers that
  # read; this machine's kernel has no RDMA modules for the driver layer to load).
  printf 'rdma_hosts:\n  hosts:\n    localhost:\n      ansible_connection: local\n' > "$out/consumer-inventory.yml"
  (cd "$out" && env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$install" ANSIBLE_LOCALHOST_WARNING=0 \
      ansible-playbook -i consumer-inventory.yml -e "ansible_python_interpreter=$(command -v python)" \
      --check --tags preflight,facts rdmaops.roce.site)
}

# A smoke of benchmarks/fleet.py (N = 2) so the benchmark cannot rot: containers from the molecule
# image, site.yml's container layers fresh and again (changed=0 required), the ping baseline.
# The ofed layer is left out here: its package downloads are most of a fresh run's time, and the
# molecule tier's ofed_inbox scenario proves that install. The full run (N = 1, 8, 32) stays out
# of CI: docs/benchmarks.md says how to run it.
tier_bench() {
  ensure_apt podman runc conmon containernetworking-plugins debootstrap gnupg
  export CONTAINERS_CONF="$REPO_ROOT/molecule/shared/containers.conf"
  (cd "$REPO_ROOT" && python benchmarks/fleet.py --hosts 2 --smoke --ping-runs 1 --skip-layers ofed --prefix rdmaops-bench-ci)
}

tier_docs() {
  (cd "$REPO_ROOT" && python scripts/gen-reference.py --check)
}


ALL_TIERS=(unit sanity lint docs build molecule switch bench lab)
SELECTED=("$@")
[ "${#SELECTED[@]}" -gt 0 ] || SELECTED=("${ALL_TIERS[@]}")
for name in "${SELECTED[@]}"; do
  declare -F "tier_$name" >/dev/null || { echo "unknown tier '$name' (tiers: ${ALL_TIERS[*]})" >&2; exit 2; }
done

total_start=$SECONDS
tier bootstrap tier_bootstrap
for name in "${SELECTED[@]}"; do
  tier "$name" "tier_$name"
done

log "timings"
printf '%s\n' "${TIMINGS[@]}"
printf '%-22s %5ss\n' total "$((SECONDS - total_start))"
