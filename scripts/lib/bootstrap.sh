# shellcheck shell=bash
# Shared set-up for the README commands: a pinned virtualenv, and this checkout linked as the
# rdmaops.roce collection so playbooks and ansible-doc find it by its FQCN.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${RDMAOPS_VENV:-$REPO_ROOT/.venv}"
export REPO_ROOT VENV

log() { printf '\n==> %s\n' "$*"; }

ensure_apt() {
  # ensure_apt PKG... : install Debian packages that are missing (needs root, as CI is).
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # wait for another apt (a parallel test run, unattended-upgrades) instead of failing on its lock
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_venv() {
  local stamp="$VENV/.requirements.sha256"
  local want
  want="$(sha256sum "$REPO_ROOT/requirements-dev.txt" | cut -d' ' -f1)"
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "creating $VENV from requirements-dev.txt"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REPO_ROOT/requirements-dev.txt"
    echo "$want" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
}

link_collection() {
  local link="$REPO_ROOT/build/collections/ansible_collections/rdmaops/roce"
  mkdir -p "$(dirname "$link")"
  [ -L "$link" ] || ln -sfn ../../../.. "$link"
  export ANSIBLE_CONFIG="$REPO_ROOT/ansible.cfg"
}

bootstrap() {
  ensure_apt git python3-venv
  ensure_venv
  link_collection
}

ensure_side_venv() {
  # ensure_side_venv NAME REQUIREMENTS : a virtualenv of its own under build/venvs/NAME for a tier
  # that must not see the development venv (plain ansible-core for the consumer tier, ansible-core
  # 2.16, ansible-builder). Rebuilt when the requirements file changes; prints its path.
  local name="$1" requirements="$REPO_ROOT/$2"
  local dir="$REPO_ROOT/build/venvs/$name" stamp want
  stamp="$dir/.requirements.sha256"
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "creating $dir from $2" >&2
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
    echo "$want" > "$stamp"
  fi
  echo "$dir"
}
