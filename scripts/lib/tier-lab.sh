# shellcheck shell=bash
# The lab test tier: the collection end to end on two soft-RoCE VMs (tests/lab).
#   boot -> converge (site.yml) -> re-run through the lab's Slurm, which must change nothing -> the
#   intent's ToS on the wire -> reboot a VM (what the VMs report must not change; the ToS on the wire
#   again) -> its RDMA devices reloaded (the ToS put back) -> verify (tests/lab/verify.yml) ->
#   validate (passes with perftest, then catches a dead switch port, tests/lab/validate_faults.py)
#   -> the rollout through the lab's real Slurm: a failed gate (tests/lab/rollout.py) -> a switch port at 1500 -> monitor: a real Prometheus scraping vm1 and
#   vm2 with the collection's rules: series, counters under ib_write_bw, the drift alert fired and
#   cleared, a counter reset (tests/lab/monitor.py) -> down
# Two rails (issue 24, tests/lab/rails.py): right after boot the ARP flux is shown on the wire (rail
# 2's traffic leaves rail 1); after the converge and after the reboot, rules, tables and sysctls
# are as planned and rail 2's ping and RDMA stay on rail 2; a rail with exclusive on vm1's management NIC
# is refused, its address, default route and SSH untouched.
# `lab.py up` checks the fabric before anything uses it (every VM answers the others' pings, rxe0
# ACTIVE; a VM whose path is dead is healed), and the tier checks it again after the converge.
# Every step's wall time is printed; the lab is taken down whatever happens.
# Not default tiers, each on a converged lab of its own: tier_lab_extended (the other validate
# faults, the rollout's other scenarios, subnet per rail, a third VM and tests/lab/mtu.yml)
# and tier_soak (tests/lab/soak.py).
# Sourced after scripts/lib/bootstrap.sh; run with `bootstrap; tier_lab` (or tier_lab_extended, tier_soak).
# shellcheck source=scripts/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

# _lab_unchanged OUTPUT: fail unless the PLAY RECAP in ansible-playbook's OUTPUT file says changed=0
# on every host; name the tasks that changed something.
_lab_unchanged() {
  python3 - "$1" <<'PY'
import re
import sys

text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
recap = text.rsplit("PLAY RECAP", 1)[-1] if "PLAY RECAP" in text else ""
hosts = dict(re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", recap, re.M))
changed_tasks = []
task = None
for line in text.splitlines():
    if line.startswith("TASK ["):
        task = line[6:].split("]")[0]
    elif line.startswith("changed: ["):
        changed_tasks.append("%s: %s" % (line[10:].split("]")[0], task))
if not hosts:
    sys.exit("idempotence: no PLAY RECAP in the second run's output")
bad = {h: c for h, c in hosts.items() if c != "0"}
if bad:
    print("idempotence: the second run changed something: %s" % ", ".join("%s changed=%s" % kv for kv in sorted(bad.items())))
    print("\n".join("  changed on " + t for t in changed_tasks))
    sys.exit(1)
print("idempotence: changed=0 on %s" % ", ".join(sorted(hosts)))
PY
}

# lab_converge_idempotent INVENTORY: run site.yml again; fail unless every host reports changed=0.
# Then the issue-14 figure: that no-op run's wall time against `ansible rdma_hosts -m ping` on the
# same VMs (median of 3), kept in lab_noop_ratio for the summary (a figure, not a pass/fail: wall
# times on a shared CI machine swing with its load).
lab_converge_idempotent() {
  local inv=$1 out rc=0 start noop
  out=$(mktemp)
  start=$(date +%s%N)
  ANSIBLE_NOCOLOR=1 ansible-playbook -i "$inv" playbooks/site.yml -e rdmaops_serial=2 2>&1 | tee "$out" || rc=$?
  noop=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$rc" -ne 0 ] || _lab_unchanged "$out" || rc=1
  rm -f "$out"
  [ "$rc" -eq 0 ] || return "$rc"
  lab_noop_vs_ping "$inv" "$noop"
}

# lab_noop_vs_ping INVENTORY NOOP_MS: time `ansible rdma_hosts -m ping` 3 times; set lab_noop_ratio.
lab_noop_vs_ping() {
  local inv=$1 noop=$2 start pings=()
  for _ in 1 2 3; do
    start=$(date +%s%N)
    ANSIBLE_NOCOLOR=1 ansible rdma_hosts -i "$inv" -m ansible.builtin.ping > /dev/null || return 1
    pings+=($(( ($(date +%s%N) - start) / 1000000 )))
  done
  lab_noop_ratio=$(python3 -c 'import statistics, sys
noop, pings = int(sys.argv[1]), sorted(int(p) for p in sys.argv[2:])
ping = statistics.median(pings)
print("no-op site.yml %.1f s = %.1f pings (ansible rdma_hosts -m ping %.1f s, median of %s)"
      % (noop / 1000, noop / ping, ping / 1000, ", ".join("%.1f" % (p / 1000) for p in pings)))' "$noop" "${pings[@]}")
  echo "$lab_noop_ratio"
}

# lab_verify INVENTORY: run tests/lab/verify.yml (the lab's own checks).
lab_verify() {
  ANSIBLE_NOCOLOR=1 ansible-playbook -i "$1" tests/lab/verify.yml
}

# lab_validate INVENTORY [ARGS...]: playbooks/validate.yml (rdmaops.roce.validate) on the healthy lab must pass
# with changed=0 and perftest's bandwidth and latency in report.json; then one fault at a time (vm2's
# fabric MTU 1500, vm1's rdma_cm ToS, rdma_cm unloaded on vm2, a switch state whose PFC disagrees,
# vm2's lab switch port down: exactly the reachability finding, perftest between them not checked),
# each undone afterwards, must fail it with the right host, field and hint (tests/lab/validate_faults.py).
# Remembers the bandwidth line.
lab_validate() {
  local out rc=0
  out=$(mktemp)
  python3 "$REPO_ROOT/tests/lab/validate_faults.py" -i "$@" 2>&1 | tee "$out" || rc=$?
  lab_bandwidth=$(grep -o 'ib_write_bw .* usec typical (ToS [0-9]*)' "$out" | tail -n 1 || true)
  rm -f "$out"
  return "$rc"
}

# lab_heal_stall STEP: after STEP failed, tell the transmit stall of issue 22 (tests/lab/README.md,
# "The transmit stall of issue 22": a virtio NIC of a TCG VM that stops transmitting for good, its
# cause not found) from a failure of the collection: a VM whose fabric path is dead with the kernel's
# transmit watchdog lines as evidence is healed (lab.py heal) and noted in lab_stalls. Returns 1 when
# no VM shows that stall, or the heal did not bring its path back.
lab_heal_stall() {
  local stalled vm
  stalled=$(lab_cli status --json 2>/dev/null | python3 -c 'import json, sys
vms = json.load(sys.stdin)["fabric"]["vms"]
print(" ".join(name for name, vm in sorted(vms.items()) if not vm.get("healthy") and vm.get("watchdog_count")))' || true)
  [ -n "$stalled" ] || return 1
  for vm in $stalled; do
    log "lab: $1 failed with $vm's fabric NIC stalled (the kernel's transmit watchdog, issue 22): healing $vm"
    lab_cli heal "$vm" || return 1
  done
  lab_stalls+=("$1: $stalled")
}

_lab_step() {
  # _lab_step NAME CMD...: run one step of the tier and note its wall time. A step that failed with a
  # VM's transmit stall runs once more after the heal (never one that says lab_rerun=0: a step that
  # changes what a second run starts from), and the timings say so.
  local name=$1 took again rc=0 mark="" out
  shift
  log "lab: $name"
  out=$(mktemp)
  lab_time took _lab_logged "$out" "$@" || rc=$?
  if [ "$rc" -ne 0 ] && [ "${lab_rerun:-1}" = 1 ] && lab_heal_stall "$name"; then
    log "lab: $name again, after the heal"
    rc=0
    lab_time again "$@" || rc=$?
    took=$(python3 -c 'import sys; print(round(float(sys.argv[1]) + float(sys.argv[2]), 1))' "$took" "$again")
    mark="  (run twice: a transmit stall healed)"
  fi
  lab_timings+=("$(printf '  %-36s %7ss%s%s' "$name" "$took" "$([ "$rc" -eq 0 ] || echo '  FAILED')" "$mark")")
  # a failed step's verdict lines (and its last lines), printed again after the timings: the end of a
  # long log is what a CI page shows
  [ "$rc" -eq 0 ] || lab_failures+=("--- $name (rc $rc)" "$(grep -E '^(FAIL|fatal|ERROR|AssertionError|E  )' "$out" | tail -n 20)" "$(tail -n 8 "$out")")
  rm -f "$out"
  return "$rc"
}

# _lab_logged FILE CMD...: run CMD, its output to this log and to FILE
_lab_logged() {
  local file=$1 rc=0
  shift
  "$@" > >(tee "$file") 2>&1 || rc=$?
  wait "$!" 2>/dev/null || true  # tee has written all of it before the caller reads FILE
  return "$rc"
}

# shellcheck disable=SC2317  # runs from the EXIT trap
_lab_finish() {
  local rc=$? took
  set +e
  trap - EXIT INT TERM
  if [ "$rc" -ne 0 ]; then
    log "lab tier failed (rc $rc): lab status and the end of each VM's console"
    lab_cli status
    for vm in $(lab_cli status --json --no-fabric 2>/dev/null | python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)["vms"]))' || echo vm1 vm2); do
      echo "--- $vm console"
      lab_cli console "$vm" --lines 15
    done
  fi
  log "lab: down"
  # the tier's own lab (next to someone else's) leaves not even its keys behind
  local down_args=()
  [ "${RDMAOPS_LAB_STATE:-}" != /run/rdmaops-lab-tier ] || down_args=(--purge)
  lab_time took lab_cli down "${down_args[@]}" || rc=1
  lab_timings+=("$(printf '  %-36s %7ss' down "$took")")
  log "lab tier timings"
  printf '%s\n' "${lab_timings[@]}"
  if [ -n "${lab_failures[*]:-}" ]; then
    log "lab: why the failed steps failed (their FAIL lines, then their last lines)"
    printf '%s\n' "${lab_failures[@]}"
  fi
  if [ -n "${lab_stalls[*]:-}" ]; then
    log "lab: transmit stalls healed (issue 22; the steps named ran again)"
    printf '  %s\n' "${lab_stalls[@]}"
  fi
  exit "$rc"
}

# lab_reboot_keeps VM: reboot VM; fail unless every VM's summary (rxe0 state, active_mtu,
# fabric netdev, MTU, addresses) reads the same afterwards: what the collection set must
# survive a reboot.
lab_reboot_keeps() {
  local before after
  before=$(lab_cli summary)
  lab_cli reboot "$1"
  after=$(lab_cli summary)
  echo "$after"
  if [ "$before" != "$after" ]; then
    echo "the reboot of $1 changed what the VMs report:"
    diff <(echo "$before") <(echo "$after") || true
    return 1
  fi
  echo "after the reboot of $1 every VM reports what it did before"
}

# lab_switch_port_check: the lab's switch ports are real: with vm2's port at 1500, a jumbo ping
# from vm1 to vm2 that fits the VMs' MTU must fail while a 1500-byte one passes; with the port
# back at the switch MTU the jumbo ping passes again.
lab_switch_port_check() {
  local mtu size peer
  peer=$(lab_cli status --json --no-fabric | python3 -c 'import json, sys; print(json.load(sys.stdin)["vms"]["vm2"]["fabric_address"].split("/")[0])')
  # shellcheck disable=SC2016  # expanded in the VM
  mtu=$(lab_cli ssh vm1 'cat /sys/class/net/$(cat /sys/class/infiniband/rxe0/parent)/mtu')
  if [ "$mtu" -le 1500 ]; then
    echo "vm1's fabric MTU is $mtu after converge: site.yml should have raised it (roce_fabric.host_mtu)"
    return 1
  fi
  size=$((mtu - 28))
  lab_cli up --port-mtu vm2=1500 > /dev/null
  if lab_cli ssh vm1 "ping -c 2 -W 2 -M do -s $size $peer" > /dev/null; then
    echo "a $mtu-byte ping crossed vm2's 1500-byte switch port"
    lab_cli up > /dev/null
    return 1
  fi
  lab_cli ssh vm1 "ping -c 2 -W 2 -M do -s 1472 $peer" > /dev/null
  lab_cli up > /dev/null
  lab_cli ssh vm1 "ping -c 2 -W 2 -M do -s $size $peer" > /dev/null
  echo "switch port of vm2 at 1500: $mtu-byte pings dropped, 1500-byte pings pass; back at the switch MTU: $mtu passes"
}

# lab_tos_on_wire CLIENT SERVER: RoCEv2 between the two VMs over RDMA-CM without an explicit ToS,
# captured on the lab's switch, carries the intent's ToS both ways (tests/lab/tos_on_wire.py).
lab_tos_on_wire() {
  python3 "$REPO_ROOT/tests/lab/tos_on_wire.py" "$1" "$2" --intent "$REPO_ROOT/inventories/lab/group_vars/all.yml"
}

# lab_tos_after VM PEER: after VM's RDMA device (re)appeared, wait (60 s at most) for the boot
# re-apply to write rxe0's default ToS, say when it did, then prove it on the wire.
lab_tos_after() {
  local vm=$1 peer=$2 tos="" waited=0 want
  want=$(cd "$REPO_ROOT/tests/lab" && python3 -c 'import sys, tos_on_wire; print(tos_on_wire.intent_tos(sys.argv[1]))' \
    "$REPO_ROOT/inventories/lab/group_vars/all.yml")
  while [ "$waited" -lt 60 ]; do
    tos=$(lab_cli ssh "$vm" 'cat /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos 2>/dev/null' || true)
    [ "$tos" != "$want" ] || break
    sleep 1
    waited=$((waited + 1))
  done
  echo "$vm: rxe0 default_roce_tos ${tos:-unreadable} ${waited}s after its device appeared"
  lab_cli ssh "$vm" 'systemctl --no-pager status "rdmaops-nic-qos@rxe0.service" | head -n 5' || true
  # the peer connects (RDMA-CM), VM answers: both ends' packets are judged. VM as the client
  # failed in the two-rail lab: vm2's main table listed rail 2's route to the shared subnet first,
  # and RDMA-CM (perftest's --source_ip did not help) resolved vm1's rail-1 address through rail 2,
  # where arp_ignore=1 rightly leaves it unanswered (docs/multirail.md)
  lab_tos_on_wire "$peer" "$vm"
}

# lab_rxe_reload_puts_tos_back VM PEER: take VM's RDMA devices away and back (rdma_rxe reloaded,
# rxe0 and rxe1 re-created, as a driver reload or DKMS upgrade does on a real NIC): the udev rule the
# nic role installed starts rdmaops-nic-qos@rxe0, which writes the ToS again; proven on the wire.
lab_rxe_reload_puts_tos_back() {
  # shellcheck disable=SC2016  # expanded in the VM
  # every Soft-RoCE device goes with the module (rxe1 too on a two-rail VM) and comes back on its netdev
  lab_cli ssh "$1" 'set -e; links=""; for d in /sys/class/infiniband/rxe*; do n=${d##*/}; links="$links $n:$(cat "$d/parent")"; done
    for l in $links; do rdma link delete "${l%%:*}"; done
    modprobe -r rdma_rxe || echo "rdma_rxe stays loaded (in use): its devices are re-created only";
    modprobe rdma_rxe; for l in $links; do rdma link add "${l%%:*}" type rxe netdev "${l#*:}"; done; ls /sys/class/infiniband'
  lab_tos_after "$1" "$2"
}

# lab_own_state STATE_DIR SSH_BASE: a lab someone left running (the main command leaves one up) is
# theirs: test in a lab of our own next to it instead of converging theirs and taking it down.
lab_own_state() {
  local rc=0
  lab_cli status --no-fabric > /dev/null 2>&1 || rc=$?
  if [ "$rc" -ne 3 ]; then
    export RDMAOPS_LAB_STATE=$1 RDMAOPS_LAB_SSH_BASE_PORT=$2
    log "lab: a lab is running already; the tier uses its own ($RDMAOPS_LAB_STATE, SSH ports from $(($2 + 1)))"
  fi
}

# lab_rails ARGS...: tests/lab/rails.py (flux | check [--subnet-per-rail] | management -i INV) on the running lab.
lab_rails() {
  python3 "$REPO_ROOT/tests/lab/rails.py" "$@"
}

# lab_rails_subnet_per_rail INVENTORY: the second rails scenario on vm1 and vm2: rail 2 moved to a
# subnet of its own by the nic layer alone (--tags nic, tests/lab/rails-subnet-per-rail.yml), then
# checked like the first. Not run again for changed=0: the provisioning's rail-2 address comes back
# on vm2 with networkd's reload, and a second run removes it again (docs/multirail.md, "Not yet").
lab_rails_subnet_per_rail() {
  # without the scheduler: through it (two batches, each drained and gated) it took 424 s; the
  # rollout is proven by tests/lab/rollout.py
  ANSIBLE_NOCOLOR=1 ansible-playbook -i "$1" playbooks/site.yml --tags nic --limit "vm1,vm2" \
    -e @"$REPO_ROOT/tests/lab/rails-subnet-per-rail.yml" -e rdmaops_scheduler=none || return 1
  lab_rails check --subnet-per-rail --vms vm1,vm2
}

# lab_driver_upgrade INVENTORY [STEPS]: tests/lab/driver_upgrade.py, the DOCA-OFED upgrade, downgrade and a
# broken release through the lab's Slurm against the lab's signed DOCA stand-in repository (lab.py
# doca-repo); it ends with the lab back on the inbox stack.
lab_driver_upgrade() {
  python3 "$REPO_ROOT/tests/lab/driver_upgrade.py" -i "$1" ${2:+--steps "$2"}
}

# lab_driver_version_refused INVENTORY: the short form of lab_driver_upgrade proposed for the default
# lab tier (not called by tier_lab): a DOCA release the lab's repository does not hold is refused, from
# the converged (inbox) lab, before any node is drained.
lab_driver_version_refused() {
  lab_driver_upgrade "$1" missing
}

# _lab_tier_start [APT_PACKAGE...]: the start every lab tier shares, in the tier's subshell: strict
# mode, timings, the lab taken down on exit, a lab of its own beside a running one, then the host
# packages (the lab's and these), the image and two VMs up with a healthy fabric. Sets lab_t0 and
# lab_inv (the inventory that reaches the lab).
_lab_tier_start() {
  set -euo pipefail
  cd "$REPO_ROOT"
  lab_timings=()
  lab_failures=()
  lab_stalls=()
  lab_bandwidth=""
  lab_noop_ratio=""
  trap _lab_finish EXIT
  trap 'exit 130' INT TERM
  lab_t0=$(date +%s)
  lab_own_state /run/rdmaops-lab-tier 2230
  _lab_step "host packages" ensure_apt "${LAB_APT_PACKAGES[@]}" "$@"
  _lab_step "image (cached unless recipe changed)" lab_cli build
  _lab_step "up: 2 VMs to SSH, fabric healthy" lab_cli up -n 2
  lab_inv=$(lab_inventory)
}

# _lab_tier_total: the tier's wall time before `down`, as the last timing line.
_lab_tier_total() {
  lab_timings+=("$(printf '  %-36s %7ss' "total before down" "$(($(date +%s) - lab_t0))")")
}

# tier_soak: the lab under load for RDMAOPS_SOAK_SECONDS (default 600): boot, converge (the rings,
# MTU and RDMA settings the collection gives the fabric NIC), then tests/lab/soak.py with 2 host CPU
# hogs (stress-ng), pings between the VMs and ib_write_bw back to back; fails on any lost ping,
# failed ib_write_bw run, transmit watchdog line or TX error.
tier_soak() {
  (
    _lab_tier_start stress-ng
    # as the lab tier converges: without the rollout's gate (through it, on 2026-11-27, ib_write_lat
    # timed out under the host's load and the gate kept vm1 drained before the soak began)
    _lab_step "converge: site.yml" ansible-playbook -i "$lab_inv" playbooks/site.yml -e rdmaops_scheduler=none
    _lab_step "soak: ${RDMAOPS_SOAK_SECONDS:-600} s under 2 CPU hogs" \
      python3 "$REPO_ROOT/tests/lab/soak.py" --duration "${RDMAOPS_SOAK_SECONDS:-600}" --cpu-hogs 2
    _lab_tier_total
  )
}

tier_lab() {
  (
    _lab_tier_start
    local inv=$lab_inv
    _lab_step "rails: ARP flux before the fix" lab_rails flux
    # A fresh lab has no jobs: it converges in one pass without the scheduler (through the rollout it
    # takes two: what disrupts no job first, then the rest once drained). The re-run below and
    # tests/lab/rollout.py go through the lab's Slurm (inventories/lab: rdmaops_scheduler slurm).
    _lab_step "converge: site.yml" ansible-playbook -i "$inv" playbooks/site.yml -e rdmaops_scheduler=none
    _lab_step "fabric health after converge" lab_cli status
    _lab_step "rails: per-rail paths (one subnet)" lab_rails check
    _lab_step "rails: exclusive on the mgmt NIC refused" lab_rails management -i "$inv" --vm vm1
    _lab_step "idempotent re-run: changed=0" lab_converge_idempotent "$inv"
    _lab_step "ToS on the wire: vm1 <-> vm2" lab_tos_on_wire vm1 vm2
    _lab_step "reboot vm2 (state survives)" lab_reboot_keeps vm2
    _lab_step "ToS on the wire after vm2's reboot" lab_tos_after vm2 vm1
    _lab_step "rails: as planned after vm2's reboot" lab_rails check
    _lab_step "rxe reload on vm2: ToS put back" lab_rxe_reload_puts_tos_back vm2 vm1
    _lab_step "verify: tests/lab/verify.yml" lab_verify "$inv"
    # the other faults (MTU, ToS, rdma_cm, switch PFC) run in tier_lab_extended: CI's time
    _lab_step "validate: passes, dead port caught" lab_validate "$inv" --faults fabric
    # the failed gate: drain, apply, the gate's finding, the host kept drained, the next wave not run.
    # The other scenarios (a drain that waits for a job, the drain-timeout policies, the limit from
    # the inventory, two runs at once, a node drained by hand) run in tier_lab_extended: CI's time;
    # the unit tier's integration tests run each against a real Slurm
    lab_rerun=0 _lab_step "rollout: Slurm drain, failed gate" python3 tests/lab/rollout.py -i "$inv" --scenarios gate
    # the driver stack's day two, short form: the lab's signed DOCA stand-in repository served, and a
    # release it lacks refused before any node is drained (the upgrade, downgrade and broken release
    # through Slurm run in tier_lab_extended: about 20 minutes)
    lab_rerun=0 _lab_step "driver: a DOCA release not in the repository refused" lab_driver_version_refused "$inv"
    _lab_step "switch port at 1500 drops jumbo" lab_switch_port_check
    # vm3 (netplan) and tests/lab/mtu.yml on three VMs run in tier_lab_extended (ifupdown and
    # networkd are proven here across a reboot; netplan by molecule's nic_mtu scenario with the
    # real `netplan generate`)
    # near the end: the collector stays at a 15 s interval afterwards (the lab goes down soon)
    lab_rerun=0 _lab_step "monitor: Prometheus, counters, drift alert" python3 tests/lab/monitor.py -i "$inv" --leave-interval
    _lab_step "fabric health at the end" lab_cli status
    lab_cli summary
    [ -z "$lab_bandwidth" ] || echo "$lab_bandwidth"
    [ -z "$lab_noop_ratio" ] || echo "$lab_noop_ratio"
    _lab_tier_total
  )
}

# tier_lab_extended (not a default tier: about 20 minutes): what the default lab tier leaves out for
# CI's time, on a converged lab of its own: validate's other four faults (vm2's MTU 1500, vm1's ToS,
# rdma_cm unloaded, a switch whose PFC disagrees), the rollout's scenarios through the lab's Slurm
# other than the failed gate (a drain that waits for a job, the drain-timeout policies skip and fail,
# rdmaops_max_unavailable from the inventory, two runs at once, a node drained by hand), the DOCA-OFED
# upgrade, downgrade and broken release (tests/lab/driver_upgrade.py), rail 2 moved to a subnet of its own (--tags nic), and a third VM (netplan,
# one rail) joining for tests/lab/mtu.yml on all three.
tier_lab_extended() {
  (
    _lab_tier_start
    local inv=$lab_inv
    _lab_step "converge: site.yml" ansible-playbook -i "$inv" playbooks/site.yml -e rdmaops_scheduler=none
    _lab_step "validate: 4 more faults caught" lab_validate "$inv" --faults mtu,tos,rdma_cm,switch --skip-healthy
    lab_rerun=0 _lab_step "rollout: wait for a job, drain timeout skip, fail" python3 tests/lab/rollout.py -i "$inv" --scenarios disruptive,skip,fail
    lab_rerun=0 _lab_step "rollout: limit from the inventory, two runs at once, a hand drain" python3 tests/lab/rollout.py -i "$inv" --scenarios limit,parallel,handdrain
    lab_rerun=0 _lab_step "driver: DOCA upgrade, downgrade, broken" lab_driver_upgrade "$inv"
    # vm3's fabric NIC is netplan's (vm1 ifupdown, vm2 networkd). vm3 has one rail: a VM whose two
    # rails share a subnet without the rails' rules answers from whichever NIC its main table lists
    # first, which vm1 and vm2 (arp_ignore=1 since the converge) rightly ignore on the other rail
    _lab_step "up: vm3 (netplan, one rail) joins" lab_cli up -n 3 --rails 1
    _lab_step "mtu: tests/lab/mtu.yml on 3 VMs" ansible-playbook -i "$(lab_cli inventory)" tests/lab/mtu.yml
    # last: it moves vm1's and vm2's rail 2 away from inventories/lab's rails, which the runs above use
    _lab_step "rails: subnet per rail (--tags nic)" lab_rails_subnet_per_rail "$inv"
    _lab_tier_total
  )
}
