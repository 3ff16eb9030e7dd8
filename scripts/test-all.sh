#!/usr/bin/env bash
# The README's test command: every test tier, from a fresh clone on a fresh machine.
# Installs what it needs (apt packages, a virtualenv from requirements-dev.txt), then runs
# unit tests, ansible-test sanity, ansible-lint, the generated reference and docs lint, the
# collection built and used as a consumer would (consumer), molecule scenarios (podman),
# switch_roce on a SONiC stand-in container (podman) and the soft-RoCE lab end to end (QEMU VMs),
# printing how long each tier took (the container and VM tiers' images are built in the background
# while the unit and static tiers run). Not in the default run: core216 (sanity and a unit subset on
# the lowest ansible-core we claim) and ee (an execution environment built and running site.yml).
#
#   bash scripts/test-all.sh                 every tier
#   bash scripts/test-all.sh unit sanity     only the named tiers (bootstrap always runs)
#   RDMAOPS_BUILD_DIR=/tmp/x bash scripts/test-all.sh sanity   build somewhere else
#   bash scripts/test-all.sh lab_extended    the lab steps left out of the lab tier for CI's time (not
#                                            a default tier: about 20 min; tests/lab/README.md)
#   bash scripts/test-all.sh soak            the lab under load (not a default tier: about 16 min,
#                                            RDMAOPS_SOAK_SECONDS=600 of it the soak itself)
set -euo pipefail
# shellcheck source=scripts/lib/bootstrap.sh
source "$(dirname "$0")/lib/bootstrap.sh"
# shellcheck source=scripts/lib/collection-tree.sh
source "$(dirname "$0")/lib/collection-tree.sh"
# shellcheck source=scripts/lib/lanes.sh
source "$(dirname "$0")/lib/lanes.sh"
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
  # libyang-tools: yanglint validates the SONiC driver's tables against sonic-yang-models;
  # netplan.io: `netplan generate` renders the MTU and rails drop-ins (else those tests skip);
  # slurmctld, slurmd, slurm-client, munge: a real Slurm on this machine for the rollout tests;
  # prometheus: promtool parses the monitor's metrics and runs its alert rule tests;
  # iputils-ping: validate's path check pings between network namespaces (a fresh machine has no ping)
  ensure_apt ifupdown libyang-tools netplan.io slurmctld slurmd slurm-client munge prometheus iputils-ping
  # Two worker processes (pytest-xdist), a test file each at a time: most tests wait on a real part
  # (ansible-playbook, Slurm's daemons, a namespace's pings), so two keep both cores busy; a file's
  # tests stay together, in order, with their module-scoped fixtures (a Slurm cluster, a stand-in).
  # RDMAOPS_UNIT_WORKERS=0 runs them in this process.
  (cd "$REPO_ROOT" && python -m pytest -q -p no:cacheprovider --durations=15 \
      -n "${RDMAOPS_UNIT_WORKERS:-2}" --dist loadfile)
}

# run_sanity BIN DEST: ansible-test sanity of a copy of the checkout under DEST, with the
# ansible-test and Python of the virtualenv whose bin directory is BIN.
run_sanity() {
  local bin="$1" dest="$2"; shift 2
  ensure_apt shellcheck
  # ansible-test bootstraps pip in its virtualenvs with a script it downloads from a host we
  # cannot reach; it uses a cached copy when one exists, so give it ours.
  local version cache
  version="$("$bin/python" - <<'PY'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
print(get_venv_packages(NativePythonConfig(version="3.11"))["pip"])
PY
)"
  cache="$HOME/.ansible/test/cache/get_pip_${version//./_}.py"
  mkdir -p "$(dirname "$cache")"
  cp "$REPO_ROOT/scripts/lib/get_pip_offline.py" "$cache"
  local tree
  tree="$(collection_tree "$dest")"
  # The httpapi plugin builds on ansible.netcommon (a dependency in galaxy.yml; the development
  # venv has it from the `ansible` package): the import test needs it beside the collection, as an
  # install would have it.
  link_dependencies "$dest" ansible.netcommon
  # Ignore files stay empty: the collection passes every sanity test as it is.
  (cd "$tree" && "$bin/ansible-test" sanity --python "$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
      --requirements --color no "$@" 2>&1 | sed "/^WARNING: Location 'file:/d" )
}

# link_dependencies ROOT FQCN...: the development venv's copies of these collections (from the
# pinned `ansible` package) linked into ROOT/ansible_collections.
link_dependencies() {
  local root="$1" fqcn path; shift
  for fqcn in "$@"; do
    path="$(python -c "import ansible_collections.$fqcn as m; print(list(m.__path__)[0])")"
    mkdir -p "$root/ansible_collections/${fqcn%%.*}"
    ln -sfn "$path" "$root/ansible_collections/${fqcn%%.*}/${fqcn#*.}"
  done
}

tier_sanity() { run_sanity "$VENV/bin" "$BUILD_DIR/sanity"; }

# The lowest ansible-core that meta/runtime.yml claims (requires_ansible), in a venv of its own
# (requirements-core216.txt): ansible-test sanity, then the tests where the core version matters,
# run by 2.16's ansible: every module and role through `ansible -m` and ansible-playbook
# (tests/integration), the switch_roce/NVUE and httpapi plugin tests against the stand-in, the
# filters. Left to the unit tier on 2.19: the parsers and engines below them (plain Python that no
# core version changes) and the two module test files that drive modules in-process with
# ansible.module_utils.testing (new in 2.19; tests/integration runs those modules on 2.16).
# Not a default tier (minutes on CI): run it when core compatibility may change.
CORE216_TESTS=(tests/integration tests/unit/plugins/httpapi tests/unit/plugins/filter tests/unit/plugins/lookup
               tests/unit/plugins/modules/test_switch_roce_nvue.py tests/unit/test_collection_metadata.py)
tier_core216() {
  ensure_apt ifupdown
  local venv
  venv="$(ensure_side_venv core216 requirements-core216.txt)"
  # 2.16's future-import and metaclass boilerplate tests are for modules that still run on Python 2
  # (2.17 dropped them with Python 2); ours need Python 3.8 on the host (the preflight refuses less).
  run_sanity "$venv/bin" "$BUILD_DIR/core216" --skip-test future-import-boilerplate --skip-test metaclass-boilerplate
  # The tests run inside the sanity copy, where the collection sits under ansible_collections
  # beside its dependency and ansible.posix (the tests' JSON callback).
  link_dependencies "$BUILD_DIR/core216" ansible.utils ansible.posix
  (cd "$BUILD_DIR/core216/ansible_collections/rdmaops/roce" && \
      PATH="$venv/bin:$PATH" "$venv/bin/python" -m pytest -q -p no:cacheprovider "${CORE216_TESTS[@]}")
}

tier_lint() {
  (cd "$REPO_ROOT" && ansible-lint --profile production --strict -q)
}

# The collection as another team gets it (tests/consumer/consumer.py): the tarball built, checked
# (no development files, CHANGELOG.rst inside, every link of the shipped Markdown resolving inside
# it), installed offline with its dependencies (ansible.netcommon and ansible.utils made from the
# pinned `ansible` package) into an empty project on plain ansible-core, and used there:
# ansible-doc of every plugin and role, site.yml's switch play against the NVUE stand-in, a
# playbook with the roles and a module_defaults group by FQCN. Twice: on the newest ansible-core
# (requirements-consumer.txt) and on the lowest that meta/runtime.yml claims
# (requirements-consumer216.txt), each in a venv of its own with nothing but ansible-core.
tier_consumer() {
  local venv core
  for core in consumer consumer216; do
    venv="$(ensure_side_venv "$core" "requirements-$core.txt")"
    (cd "$REPO_ROOT" && python tests/consumer/consumer.py --venv "$venv" --work "$BUILD_DIR/$core")
  done
}
# The former name of the tier that built and installed the collection.
tier_build() { tier_consumer; }

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

# An execution environment built and used (tests/ee/ee.py; not a default tier, minutes of image
# builds): docs/execution-environment.yml built by ansible-builder (requirements-ee.txt, its own
# venv) and podman on a Debian base image made here with debootstrap, then ansible-runner runs
# site.yml inside it against benchmarks/fleet.py's container hosts, twice (changed=0 the second
# time). docs/execution-environment.md has its figures.
tier_ee() {
  ensure_apt podman runc conmon containernetworking-plugins debootstrap
  local venv
  venv="$(ensure_side_venv ee requirements-ee.txt)"
  (cd "$REPO_ROOT" && python tests/ee/ee.py --venv "$venv" --work "$BUILD_DIR/ee")
}

tier_docs() {
  # The shipped docs against the code: names, tags, files, links, fences, version examples
  # (scripts/check-docs.py prints file:line and the name for each problem).
  (cd "$REPO_ROOT" && python scripts/check-docs.py)
  (cd "$REPO_ROOT" && python scripts/gen-reference.py --check)
  # antsibull-docs' linter: every plugin's and role's documentation against the docsite schema,
  # its markup (O(), M(), R() ... references resolved, here and in ansible.netcommon/utils) and
  # rstcheck of the RST it would render. Only this collection and its dependencies are visible
  # to it (the development venv's `ansible` package has a hundred more, a few minutes of
  # ansible-doc --metadata-dump).
  local root="$BUILD_DIR/docs-lint"
  rm -rf "$root"
  mkdir -p "$root/ansible_collections/rdmaops"
  ln -sfn "$REPO_ROOT" "$root/ansible_collections/rdmaops/roce"
  link_dependencies "$root" ansible.netcommon ansible.utils
  ANSIBLE_COLLECTIONS_PATH="$root" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=0 antsibull-docs lint-collection-docs \
      --plugin-docs --validate-collection-refs all --disallow-unknown-collection-refs \
      "$root/ansible_collections/rdmaops/roce"
  echo "antsibull-docs lint-collection-docs: no finding"
  # The docsite: antsibull-docs renders every plugin and role, Sphinx the guides and the
  # changelog, warnings as errors, offline; then every internal link of the HTML is checked.
  (cd "$REPO_ROOT" && python scripts/build-docsite.py --build-dir "$BUILD_DIR")
}


ALL_TIERS=(unit sanity lint docs consumer molecule switch bench lab)
SELECTED=("$@")
[ "${#SELECTED[@]}" -gt 0 ] || SELECTED=("${ALL_TIERS[@]}")
for name in "${SELECTED[@]}"; do
  declare -F "tier_$name" >/dev/null || { echo "unknown tier '$name' (tiers: ${ALL_TIERS[*]}; by hand: core216 ee lab_extended soak)" >&2; exit 2; }
done

# The static tiers run at once when more than one of them is selected: sanity on its own, the others
# one after another beside it (tier_together). Each is single-threaded for most of its time, so on two
# cores this saves about two minutes; each one's output is printed, in order, when all are done.
TOGETHER=(sanity lint docs consumer)

# _tier_by_name NAME: tier NAME (a job of the lanes in tier_together)
_tier_by_name() { "tier_$1"; }

tier_together() {
  local dir="$BUILD_DIR/tier-logs" name rc=0 took tier_rc start=$SECONDS lanes=1
  local -a order=()
  log "tiers at once: $* (sanity beside the others; their output follows when all are done)"
  # sanity first, in a lane of its own while it runs, the others one after another in the second lane
  # (scripts/lib/lanes.sh: a lane free before the others are done takes the next one)
  if [[ " $* " == *" sanity "* ]]; then
    order+=(sanity)
    lanes=2
  fi
  for name in "$@"; do [ "$name" = sanity ] || order+=("$name"); done
  lanes_run "$dir" "$lanes" tier _tier_by_name "${order[@]}"
  lanes_print "$dir" tier "$@"
  for name in "$@"; do
    read -r took tier_rc < <(lanes_result "$dir" "$name")
    TIMINGS+=("$(printf '%-22s %5ss%s' "$name" "$took" "$([ "$tier_rc" = 0 ] || echo '  FAILED')")")
    [ "$tier_rc" = 0 ] || rc=1
  done
  TIMINGS+=("$(printf '%-22s %5ss' "($* at once)" "$((SECONDS - start))")")
  # printed here too: a failed group ends the run before the closing timings
  log "timings of the tiers run at once"
  printf '%s\n' "${TIMINGS[@]: -$(($# + 1))}"
  return "$rc"
}

# The container and VM tiers' image builds (the molecule base image, the SONiC stand-in image, the
# lab's VM image; their apt packages first, in the foreground) run in the background while the unit
# and static tiers run: on a fresh machine that is minutes of debootstrap and dpkg, mostly network
# and disk, beside tiers that leave room for it. Each tier still checks its packages and images
# itself (each build keeps its cache check), so a failed prefetch costs only its own time; its log
# is printed before the first tier that needs what it made.
PREFETCH_FOR=(molecule switch bench lab)
prefetch_pid=""
prefetch_start() {
  local name wanted=0 others=0
  for name in "${SELECTED[@]}"; do
    if [[ " ${PREFETCH_FOR[*]} " == *" $name "* ]]; then wanted=1; else others=1; fi
  done
  [ "$wanted" = 1 ] && [ "$others" = 1 ] || return 0
  mkdir -p "$BUILD_DIR"
  # apt in the foreground: the unit tier's own apt-get would wait on its lock anyway
  ensure_apt podman runc conmon containernetworking-plugins debootstrap gnupg "${LAB_APT_PACKAGES[@]}"
  (
    set -e
    start=$SECONDS
    export CONTAINERS_CONF="$REPO_ROOT/molecule/shared/containers.conf"
    bash "$REPO_ROOT/molecule/shared/build-image.sh"
    [[ " ${SELECTED[*]} " != *" switch "* ]] || sonic_standin_image
    [[ " ${SELECTED[*]} " != *" lab "* ]] || lab_cli build
    echo "prefetch: done in $((SECONDS - start)) s"
  ) > "$BUILD_DIR/prefetch.log" 2>&1 &
  prefetch_pid=$!
  log "prefetch: packages and images for ${PREFETCH_FOR[*]} in the background (build/prefetch.log)"
}
prefetch_wait() {
  [ -n "$prefetch_pid" ] || return 0
  local rc=0
  wait "$prefetch_pid" || rc=$?
  prefetch_pid=""
  log "prefetch (background): $([ "$rc" = 0 ] && echo "done" || echo "failed (rc=$rc): each tier fetches and builds what it needs itself")"
  cat "$BUILD_DIR/prefetch.log" 2>/dev/null || true
  TIMINGS+=("$(printf '%-22s %5ss%s' "(prefetch, background)" \
    "$(sed -n 's/^prefetch: done in \([0-9]*\) s$/\1/p' "$BUILD_DIR/prefetch.log" 2>/dev/null)" "$([ "$rc" = 0 ] || echo '  FAILED')")")
}

total_start=$SECONDS
tier bootstrap tier_bootstrap
prefetch_start
together=()
for name in "${SELECTED[@]}"; do
  [[ " ${TOGETHER[*]} " == *" $name "* ]] && together+=("$name")
done
[ "${#together[@]}" -gt 1 ] || together=()
for name in "${SELECTED[@]}"; do
  if [ "${#together[@]}" -gt 0 ] && [[ " ${together[*]} " == *" $name "* ]]; then
    [ "$name" = "${together[0]}" ] || continue
    tier_together "${together[@]}"
    continue
  fi
  [[ " ${PREFETCH_FOR[*]} " != *" $name "* ]] || prefetch_wait
  tier "$name" "tier_$name"
done
prefetch_wait

log "timings"
printf '%s\n' "${TIMINGS[@]}"
printf '%-22s %5ss\n' total "$((SECONDS - total_start))"
