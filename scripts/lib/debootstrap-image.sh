#!/usr/bin/env bash
# Build a Debian image without any registry: debootstrap a minbase root filesystem and `podman
# import` it as a localhost/ image. Sourced by the test images' recipes (molecule/shared/build-image.sh,
# tests/ee/build-base-image.sh), which set:
#
#   IMAGE                     the image's name
#   PACKAGES                  an array: what debootstrap includes beyond minbase
#   IMAGE_LOCK                the lock file: one build at a time, the others wait and then find it current
#   IMAGE_WORK                the prefix of the build's temporary directory (mktemp -d "$IMAGE_WORK.XXXXXX")
#   IMAGE_MESSAGE             the import's message (the recipe's hash is appended)
#   IMAGE_CHANGES             an array of podman import --change lines (CMD, STOPSIGNAL, ...)
#   image_customize ROOTFS    a function: what the recipe does to the root filesystem before the import
#   image_recipe_extra        optional function: more recipe input than the two scripts (printed)
#
# and then call `debootstrap_image "${BASH_SOURCE[0]}" "$@"`. The suite is Debian bookworm, from
# RDMAOPS_DEBIAN_MIRROR (default deb.debian.org). The image carries the sha256 of the recipe (the
# calling script, this file, and what image_recipe_extra prints) in the label org.rdmaops.recipe; a
# build is skipped when the existing image has the same label (unless --force), so editing the recipe
# is what triggers a rebuild. Needs root, debootstrap and podman.

SUITE=bookworm
MIRROR="${RDMAOPS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

debootstrap_image() {
  local script="$1"
  shift
  exec 9>"$IMAGE_LOCK"
  flock 9
  local recipe
  recipe="$( (cat "$script" "${BASH_SOURCE[0]}"; if declare -F image_recipe_extra >/dev/null; then image_recipe_extra; fi) \
    | sha256sum | cut -c1-16)"

  if [ "${1:-}" != "--force" ]; then
    local have
    have="$(podman image inspect --format '{{ index .Labels "org.rdmaops.recipe" }}' "$IMAGE" 2>/dev/null || true)"
    if [ "$have" = "$recipe" ]; then
      echo "image $IMAGE is current (recipe $recipe)"
      return 0
    fi
    [ -z "$have" ] || echo "image $IMAGE was built from recipe $have; this recipe is $recipe: rebuilding"
  fi

  local tool
  for tool in debootstrap podman; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install $tool)" >&2; return 1; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root" >&2; return 1; }

  local work
  local work
  work="$(mktemp -d "$IMAGE_WORK.XXXXXX")"
  # shellcheck disable=SC2064  # the directory is fixed now
  trap "rm -rf --one-file-system '$work'" EXIT
  local rootfs="$work/rootfs"

  local start=$SECONDS
  echo "debootstrap $SUITE (minbase + ${PACKAGES[*]}) from $MIRROR"
  local include
  include="$(IFS=,; echo "${PACKAGES[*]}")"
  if ! debootstrap --variant=minbase --include="$include" "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    echo "debootstrap failed (full log above); is $MIRROR reachable?" >&2
    return 1
  fi

  image_customize "$rootfs"
  # No package lists or caches in the image; what installs packages runs apt-get update.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb

  local previous change
  local changes=()
  for change in "${IMAGE_CHANGES[@]}"; do changes+=(--change "$change"); done
  previous="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
  tar --numeric-owner --xattrs -C "$rootfs" -c . | podman import \
    "${changes[@]}" \
    --change "LABEL org.rdmaops.recipe=$recipe" \
    --message "$IMAGE_MESSAGE, recipe $recipe" \
    - "$IMAGE" >/dev/null

  # The image this one replaces is left without a name; remove it unless a container still uses it.
  if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
    podman rmi "$previous" >/dev/null 2>&1 || echo "kept the previous image ${previous:0:12}: a container still uses it"
  fi
  local size
  size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
  echo "built $IMAGE (recipe $recipe, $((size / 1024 / 1024)) MiB) in $((SECONDS - start))s"
}
