#!/usr/bin/env bash
# Build the Debian bookworm image the molecule scenarios run in, without any registry:
# debootstrap a minbase root filesystem and `podman import` it as a localhost/ image
# (scripts/lib/debootstrap-image.sh, shared with the execution environment's base image).
#
#   bash molecule/shared/build-image.sh            build when missing or when this recipe changed
#   bash molecule/shared/build-image.sh --force    build again anyway
#
# The image carries the sha256 of its recipe (this file and the shared builder) in the label
# org.rdmaops.recipe; a build is skipped when the existing image has the same label, so editing the
# recipe (packages, mirror, config below) is what triggers a rebuild. Needs root, debootstrap and
# podman, and CONTAINERS_CONF pointing at molecule/shared/containers.conf (scripts/lib/tier-molecule.sh
# sets it).
#
# The image boots systemd as PID 1 (podman starts /sbin/init in systemd mode), so roles can
# use systemctl, daemon-reload and oneshot units the way they do on a real host.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/lib/debootstrap-image.sh
source "$here/../../scripts/lib/debootstrap-image.sh"

IMAGE="${RDMAOPS_MOLECULE_IMAGE:-localhost/rdmaops-molecule-debian:bookworm}"
# What a test host needs: Ansible's python, the tools our modules call (ip, ethtool, sysctl,
# modprobe, lspci/setpci), ping for fabric checks, systemd as init, python3-apt for the apt module.
PACKAGES=(
  python3 python3-apt
  iproute2 iputils-ping kmod procps ethtool pciutils
  systemd systemd-sysv dbus
)
# Scenarios run by several people at once share the image: one build at a time.
IMAGE_LOCK=/var/tmp/rdmaops-molecule-image.lock
IMAGE_WORK=/var/tmp/rdmaops-rootfs
IMAGE_MESSAGE="rdmaops molecule base"
IMAGE_CHANGES=('CMD ["/sbin/init"]' 'STOPSIGNAL SIGRTMIN+3')

image_customize() {
  local rootfs="$1" unit
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
  cp "$here/build-image.sh" "$rootfs/etc/rdmaops-molecule-recipe.sh"
}

debootstrap_image "${BASH_SOURCE[0]}" "$@"
