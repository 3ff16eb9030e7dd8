# shellcheck shell=bash
# The README's main command on the soft-RoCE lab: install what the lab needs, boot two Debian
# VMs whose RDMA NIC is Soft-RoCE (tests/lab), run the collection's site playbook against them
# (inventories/lab), and print what it did. The lab stays up afterwards for a look around.
# Sourced after scripts/lib/bootstrap.sh; run with `bootstrap; main_lab [ansible-playbook args]`.
# shellcheck source=scripts/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

main_lab() {
  local inv took_up took_site took_validate=""
  cd "$REPO_ROOT" || return
  lab_ensure_host
  log "soft-RoCE lab: 2 VMs (image built once and cached, then about a minute to boot)"
  # up reuses a running lab and checks its fabric first: a VM whose path is dead is healed
  # (lab.py heal) before site.yml runs, or up fails and says why
  lab_time took_up lab_cli up -n 2
  inv=$(lab_inventory)
  # site.yml rolls the layers out through the lab's Slurm (inventories/lab); both VMs in one batch
  log "ansible-playbook -i ${inv#"$REPO_ROOT"/} playbooks/site.yml -e rdmaops_serial=2 $*"
  lab_time took_site ansible-playbook -i "$inv" playbooks/site.yml -e rdmaops_serial=2 "$@"
  if [ -f playbooks/validate.yml ]; then
    log "ansible-playbook -i ${inv#"$REPO_ROOT"/} playbooks/validate.yml"
    lab_time took_validate ansible-playbook -i "$inv" playbooks/validate.yml
  fi
  log "what the lab's RDMA NICs report now"
  lab_cli summary
  log "done"
  printf '  %-26s %7ss\n' "lab up" "$took_up" "site.yml" "$took_site"
  [ -z "$took_validate" ] || printf '  %-26s %7ss\n' "validate.yml" "$took_validate"
  cat <<EOF

The lab is still running:
  python3 tests/lab/lab.py status          VMs, SSH ports, switch-port MTUs, fabric health (pings, rxe0)
  python3 tests/lab/lab.py heal vm2        put a VM whose fabric path is dead right
  python3 tests/lab/lab.py ssh vm1         a root shell in vm1 (ibv_devinfo, rdma link, ib_write_bw ...)
  python3 tests/lab/lab.py slurm sinfo -N  the lab's Slurm (sbatch -w vm1 --wrap 'sleep 90' for a job)
  ansible-playbook -i ${inv#"$REPO_ROOT"/} playbooks/site.yml -e rdmaops_serial=2
  python3 tests/lab/lab.py down            stop it and remove what it made
EOF
}
