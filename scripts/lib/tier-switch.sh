# shellcheck shell=bash
# The switch tier of scripts/test-all.sh: switch_roce end to end on a SONiC stand-in.
#
# A podman container (the molecule base image plus Debian's redis-server, python3-jsonpatch,
# python3-redis, python3-jinja2 and libyang-tools) holds CONFIG_DB in a real redis (db 4, `PORT|Ethernet0`
# keys as SONiC stores them) seeded from tests/unit/fixtures/sonic/config_db.json; `sonic-cfggen` and
# `config apply-patch/checkpoint/rollback/delete-checkpoint` are the stand-ins of tests/tools/sonic_standins,
# which apply the JSON patch to redis after validating it with sonic-yang-models (yanglint). The
# module runs inside the container over the containers.podman.podman connection: the playbook
# tests/switch/sonic/switch_roce.yml asserts every acting state, idempotence, check mode and
# truthful rollback. Nothing here is a real SONiC switch.
#
# Needs root (rootful podman, debootstrap) and bootstrap() from scripts/lib/bootstrap.sh.

SONIC_STANDIN_IMAGE="${RDMAOPS_SONIC_IMAGE:-localhost/rdmaops-sonic-standin:bookworm}"
SONIC_STANDIN_NAME=rdmaops-sonic-leaf

sonic_standin_image() {
  local recipe have context
  # The recipe is this function's package list; the base image's own recipe label is part of it.
  local packages="redis-server python3-redis python3-jsonpatch python3-jinja2 libyang-tools"
  recipe="$(printf '%s %s' "$packages" \
    "$(podman image inspect --format '{{ index .Labels "org.rdmaops.recipe" }}' localhost/rdmaops-molecule-debian:bookworm)" \
    | sha256sum | cut -c1-16)"
  have="$(podman image inspect --format '{{ index .Labels "org.rdmaops.sonic" }}' "$SONIC_STANDIN_IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$recipe" ]; then
    echo "image $SONIC_STANDIN_IMAGE is current (recipe $recipe)"
    return 0
  fi
  context="$(mktemp -d /var/tmp/rdmaops-sonic-image.XXXXXX)"
  cat > "$context/Containerfile" <<CONTAINERFILE
FROM localhost/rdmaops-molecule-debian:bookworm
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null && rm -rf /var/lib/apt/lists/*
LABEL org.rdmaops.sonic=$recipe
CONTAINERFILE
  podman build -q -t "$SONIC_STANDIN_IMAGE" "$context" >/dev/null
  rm -rf "$context"
  echo "built $SONIC_STANDIN_IMAGE (recipe $recipe)"
}

sonic_standin_start() {
  podman rm -f "$SONIC_STANDIN_NAME" >/dev/null 2>&1 || true
  # redis is the container's one process: CONFIG_DB lives only as long as the test.
  podman run -d --name "$SONIC_STANDIN_NAME" -v "$REPO_ROOT/tests:/opt/rdmaops/tests:ro" "$SONIC_STANDIN_IMAGE" \
    /usr/bin/redis-server --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  podman exec "$SONIC_STANDIN_NAME" sh -ec '
    tools=/opt/rdmaops/tests/tools/sonic_standins
    ln -sf "$tools/config" /usr/local/bin/config
    ln -sf "$tools/sonic-cfggen" /usr/local/bin/sonic-cfggen
    mkdir -p /etc/sonic
    printf "%s\n" "build_version: '\''SONiC.202411.standin'\''" "asic_type: mellanox" "release: '\''202411'\''" \
      > /etc/sonic/sonic_version.yml
    for i in 1 2 3 4 5 6 7 8 9 10; do redis-cli ping >/dev/null 2>&1 && break; sleep 0.5; done
    sonic-cfggen -j /opt/rdmaops/tests/unit/fixtures/sonic/config_db.json --write-to-db'
}

tier_switch() {
  ensure_apt podman runc conmon containernetworking-plugins debootstrap gnupg
  export CONTAINERS_CONF="$REPO_ROOT/molecule/shared/containers.conf"
  export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
  bash "$REPO_ROOT/molecule/shared/build-image.sh"
  sonic_standin_image
  sonic_standin_start
  local rc=0
  (cd "$REPO_ROOT" && ANSIBLE_COLLECTIONS_PATH="$REPO_ROOT/build/collections" \
    ansible-playbook -i tests/switch/sonic/inventory.yml tests/switch/sonic/switch_roce.yml) || rc=$?
  podman rm -f "$SONIC_STANDIN_NAME" >/dev/null 2>&1 || true
  return "$rc"
}
