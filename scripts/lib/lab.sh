# shellcheck shell=bash
# The soft-RoCE lab (tests/lab) for the README commands: host packages and the lab CLI.
# Sourced after scripts/lib/bootstrap.sh (uses REPO_ROOT, log, ensure_apt).

# What the lab needs on the host, as Debian packages (tests/lab/lab.py names the same ones
# when a tool is missing; prometheus scrapes the VMs in tests/lab/monitor.py; slurmctld, its client
# tools and munge are the lab's Slurm controller, tests/lab/slurmlab.py).
LAB_APT_PACKAGES=(qemu-system-x86 qemu-utils debootstrap e2fsprogs openssh-client iproute2 tcpdump prometheus
  slurmctld slurm-client munge)

lab_cli() { python3 "$REPO_ROOT/tests/lab/lab.py" "$@"; }

lab_ensure_host() { ensure_apt "${LAB_APT_PACKAGES[@]}"; }

# The inventory that reaches the running lab: inventories/lab for the default ports, else the
# one lab.py writes into its state directory.
lab_inventory() {
  if [ "${RDMAOPS_LAB_SSH_BASE_PORT:-2220}" = 2220 ]; then
    echo "$REPO_ROOT/inventories/lab"
  else
    lab_cli inventory
  fi
}

# lab_time VAR CMD...: run CMD, store its wall time (seconds, one decimal) in VAR.
lab_time() {
  local __var=$1 __t0 __rc=0
  shift
  __t0=$(date +%s.%N)
  "$@" || __rc=$?
  printf -v "$__var" '%s' "$(LC_ALL=C awk -v a="$__t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')"
  return "$__rc"
}
