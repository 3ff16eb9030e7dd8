#!/usr/bin/env bash
# The README's main command: boot the soft-RoCE lab (two Debian VMs whose RDMA NIC is
# Soft-RoCE, tests/lab), run playbooks/site.yml and playbooks/validate.yml against it
# (inventories/lab), and print what it did. The lab stays up until
# `python3 tests/lab/lab.py down`. Extra arguments go to ansible-playbook (e.g. --check --diff).
set -euo pipefail
# shellcheck source=scripts/lib/bootstrap.sh
source "$(dirname "$0")/lib/bootstrap.sh"
# shellcheck source=scripts/lib/main-lab.sh
source "$(dirname "$0")/lib/main-lab.sh"
bootstrap
main_lab "$@"
