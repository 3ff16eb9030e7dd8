#!/usr/bin/env bash
# The README's main command: run the collection's site playbook on the built-in default.
# Until the soft-RoCE lab lands, the default is this machine (inventories/local) in check mode:
# nothing is changed, and the RDMA inventory of the host is printed.
set -euo pipefail
# shellcheck source=scripts/lib/bootstrap.sh
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
cd "$REPO_ROOT"
log "ansible-playbook -i inventories/local playbooks/site.yml --check --diff --tags preflight,facts"
ansible-playbook -i inventories/local playbooks/site.yml --check --diff --tags preflight,facts "$@"
