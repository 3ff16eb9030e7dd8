#!/usr/bin/env bash
# Build the Debian bookworm image the molecule scenarios run in, without any registry:
# debootstrap a minbase root filesystem and `podman import` it as a localhost/ image.
#
#   bash molecule/shared/build-image.sh            build when missing or when this recipe changed
#   bash molecule/shared/build-image.sh --force    build again anyway
#
# The image carries the sha256 of this file in the label org.rdmaops.recipe; a build is skipped
# when the existing image has the same label, so editing the recipe (packages, mirror, config
# below) is what triggers a rebuild. Needs root, debootstrap and podman, and CONTAINERS_CONF
# pointing at molecule/shared/containers.conf (scripts/lib/tier-molecule.sh sets it).
#
# The image boots systemd as PID 1 (podman starts /sbin/init in systemd mode), so roles can
# use systemctl, daemon-reload and oneshot units the way they do on a real host.
set -euo pipefail

IMAGE="${RDMAOPS_MOLECULE_IMAGE:-localhost/rdmaops-molecule-debian:bookworm}"
SUITE=bookworm
MIRROR="${RDMAOPS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What a test host needs: Ansible's python, the tools our modules call (ip, ethtool, sysctl,
# modprobe, lspci/setpci), ping for fabric checks, systemd as init, python3-apt for the apt module.
PACKAGES=(
  python3 python3-apt
  iproute2 iputils-ping kmod procps ethtool pciutils
  systemd systemd-sysv dbus
)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Scenarios run by several people at once share the image: one build at a time, the others wait
# and then find it current.
exec 9>/var/tmp/rdmaops-molecule-image.lock
flock 9
recipe="$(sha256sum < "${BASH_SOURCE[0]}" | cut -c1-16)"

if [ "${1:-}" != "--force" ]; then
  have="$(podman image inspect --format '{{ index .Labels "org.rdmaops.recipe" }}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$recipe" ]; then
    echo "image $IMAGE is current (recipe $recipe)"
    exit 0
  fi
  [ -z "$have" ] || echo "image $IMAGE was built from recipe $have; this recipe is $recipe: rebuilding"
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install $tool)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root" >&2; exit 1; }

work="$(mktemp -d /var/tmp/rdmaops-rootfs.XXXXXX)"
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

# A container has no consoles, no hardware clock and no udev: units that wait for those only
# slow the boot down or fail, so they are masked. Everything else stays as Debian ships it.
for unit in getty@tty1.service console-getty.service systemd-logind.service \
            systemd-udevd.service systemd-udev-trigger.service systemd-hwdb-update.service \
            systemd-timesyncd.service systemd-firstboot.service systemd-remount-fs.service \
            apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
  ln -sfn /dev/null "$rootfs/etc/systemd/system/$unit"
done
# The image does not pin a hostname or machine-id: podman gives each container its own.
: > "$rootfs/etc/machine-id"
rm -f "$rootfs/var/lib/dbus/machine-id"
# No package lists or caches in the image; a role that installs packages runs apt-get update.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
cp "$here/build-image.sh" "$rootfs/etc/rdmaops-molecule-recipe.sh"

previous="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
tar --numeric-owner --xattrs -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL org.rdmaops.recipe=$recipe" \
  --message "rdmaops molecule base, recipe $recipe" \
  - "$IMAGE" >/dev/null

# The image this one replaces is left without a name; remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || echo "kept the previous image ${previous:0:12}: a container still uses it"
fi
size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
echo "built $IMAGE (recipe $recipe, $((size / 1024 / 1024)) MiB) in $((SECONDS - start))s"
