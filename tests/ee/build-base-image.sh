#!/usr/bin/env bash
# The base image of the ee tier's execution environment, built without any registry: debootstrap a
# Debian bookworm minbase root filesystem with Python and pip and `podman import` it
# (scripts/lib/debootstrap-image.sh, the builder of molecule/shared/build-image.sh's test hosts' image
# too). ansible-builder puts ansible-core, ansible-runner, the collections and their dependencies on
# top (tests/ee/ee.py).
#
#   bash tests/ee/build-base-image.sh            build when missing or when this recipe changed
#   bash tests/ee/build-base-image.sh --force    build again anyway
#
# ansible-builder runs the base image's package manager as `$PKGMGR install -y PKG...` and
# `$PKGMGR clean all`, the dnf way. Debian's apt-get takes neither form as such (and a minbase image
# has no package lists), so the image carries /usr/local/sbin/ee-pkgmgr, which does the same with
# apt-get; the definition names it in options.package_manager_path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/lib/debootstrap-image.sh
source "$here/../../scripts/lib/debootstrap-image.sh"

IMAGE="${RDMAOPS_EE_BASE_IMAGE:-localhost/rdmaops-ee-base:bookworm}"
# Python for ansible-core and the builder's scripts (pip, venv), ca-certificates for pip.
PACKAGES=(python3 python3-pip python3-venv ca-certificates)
# The machine's own certificate authorities (/usr/local/share/ca-certificates), which pip inside
# the image needs wherever HTTPS goes through a TLS-inspecting proxy (it does on the project's
# machines); they are part of the recipe.
CA_DIR=/usr/local/share/ca-certificates
IMAGE_LOCK=/var/tmp/rdmaops-ee-base-image.lock
IMAGE_WORK=/var/tmp/rdmaops-ee-rootfs
IMAGE_MESSAGE="rdmaops execution environment base"
IMAGE_CHANGES=('CMD ["/bin/bash"]')

image_recipe_extra() {
  find "$CA_DIR" -type f -name '*.crt' -print0 2>/dev/null | sort -z | xargs -0r cat
}

image_customize() {
  local rootfs="$1"
  cat > "$rootfs/usr/local/sbin/ee-pkgmgr" <<'SH'
#!/bin/sh
# ansible-builder's package manager calls (dnf's forms) done with apt-get.
set -e
export DEBIAN_FRONTEND=noninteractive
command="$1"; shift
case "$command" in
  install)
    packages=""
    for arg in "$@"; do case "$arg" in -*) ;; *) packages="$packages $arg" ;; esac; done
    [ -n "$packages" ] || exit 0
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $packages
    ;;
  clean)
    apt-get clean
    rm -rf /var/lib/apt/lists/*
    ;;
  *) echo "ee-pkgmgr: $command is not supported" >&2; exit 2 ;;
esac
SH
  chmod 0755 "$rootfs/usr/local/sbin/ee-pkgmgr"
  if compgen -G "$CA_DIR/*.crt" >/dev/null; then
    cp "$CA_DIR"/*.crt "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >/dev/null
  fi
}

debootstrap_image "${BASH_SOURCE[0]}" "$@"
