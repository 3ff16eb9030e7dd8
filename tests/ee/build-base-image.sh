#!/usr/bin/env bash
# The base image of the ee tier's execution environment, built without any registry: debootstrap a
# Debian bookworm minbase root filesystem with Python and pip and `podman import` it, the way
# molecule/shared/build-image.sh builds the test hosts' image. ansible-builder puts ansible-core,
# ansible-runner, the collections and their dependencies on top (tests/ee/ee.py).
#
#   bash tests/ee/build-base-image.sh            build when missing or when this recipe changed
#   bash tests/ee/build-base-image.sh --force    build again anyway
#
# ansible-builder runs the base image's package manager as `$PKGMGR install -y PKG...` and
# `$PKGMGR clean all`, the dnf way. Debian's apt-get takes neither form as such (and a minbase image
# has no package lists), so the image carries /usr/local/sbin/ee-pkgmgr, which does the same with
# apt-get; the definition names it in options.package_manager_path.
set -euo pipefail

IMAGE="${RDMAOPS_EE_BASE_IMAGE:-localhost/rdmaops-ee-base:bookworm}"
SUITE=bookworm
MIRROR="${RDMAOPS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Python for ansible-core and the builder's scripts (pip, venv), ca-certificates for pip.
PACKAGES=(python3 python3-pip python3-venv ca-certificates)

# The machine's own certificate authorities (/usr/local/share/ca-certificates), which pip inside
# the image needs wherever HTTPS goes through a TLS-inspecting proxy (it does on the project's
# machines); they are part of the recipe.
CA_DIR=/usr/local/share/ca-certificates

exec 9>/var/tmp/rdmaops-ee-base-image.lock
flock 9
recipe="$( (cat "${BASH_SOURCE[0]}"; find "$CA_DIR" -type f -name '*.crt' -print0 2>/dev/null | sort -z | xargs -0r cat) \
  | sha256sum | cut -c1-16)"
if [ "${1:-}" != "--force" ]; then
  have="$(podman image inspect --format '{{ index .Labels "org.rdmaops.recipe" }}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$recipe" ]; then
    echo "image $IMAGE is current (recipe $recipe)"
    exit 0
  fi
fi
for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install $tool)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root" >&2; exit 1; }

work="$(mktemp -d /var/tmp/rdmaops-ee-rootfs.XXXXXX)"
cleanup() { rm -rf --one-file-system "$work"; }
trap cleanup EXIT
rootfs="$work/rootfs"
start=$SECONDS
echo "debootstrap $SUITE (minbase + ${PACKAGES[*]}) from $MIRROR"
include="$(IFS=,; echo "${PACKAGES[*]}")"
if ! debootstrap --variant=minbase --include="$include" "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  echo "debootstrap failed (full log above); is $MIRROR reachable?" >&2
  exit 1
fi
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
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
previous="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
tar --numeric-owner --xattrs -C "$rootfs" -c . | podman import \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL org.rdmaops.recipe=$recipe" \
  --message "rdmaops execution environment base, recipe $recipe" \
  - "$IMAGE" >/dev/null
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || echo "kept the previous image ${previous:0:12}: a container still uses it"
fi
size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
echo "built $IMAGE (recipe $recipe, $((size / 1024 / 1024)) MiB) in $((SECONDS - start))s"
