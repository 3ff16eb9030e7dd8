"""The ee tier: an execution environment built from the collection's tarball, running site.yml.

    python tests/ee/ee.py --venv build/venvs/ee --work build/ee [--hosts 2] [--keep-image]

``--venv`` has ansible-builder and ansible-runner (requirements-ee.txt). This script runs in the
development venv (it makes the dependency tarballs and starts the container hosts with
molecule/shared/create.yml, as benchmarks/fleet.py does). Root, podman and debootstrap are needed.

  base      tests/ee/build-base-image.sh: Debian bookworm with Python and pip, from Debian's
            packages (the registries' images cannot be pulled here)
  build     docs/execution-environment.yml, the shipped definition, with the base image replaced by
            that one and the dependencies given as tarballs (ansible.netcommon, ansible.utils from
            the pinned `ansible` package; containers.podman and podman for this test's container
            hosts), built with ansible-builder and podman; the image must list the collections
  hosts     N systemd containers from the molecule image (benchmarks/fleet.py's fleet)
  run       ansible-runner runs site.yml (its container layers) inside the execution environment
            against them, reaching them through the machine's podman socket; then again, which
            must report changed=0
"""

import argparse
import copy
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "consumer"))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import fleet  # noqa: E402  (the benchmark's container fleet)
import package_collection  # noqa: E402

IMAGE = "localhost/rdmaops-roce-ee"
BASE_IMAGE = "localhost/rdmaops-ee-base:bookworm"
SOCKET_IN_EE = "/run/podman/podman.sock"
DEPENDENCIES = ("ansible.netcommon", "ansible.utils", "containers.podman")
PREFIX = "rdmaops-ee"


def log(message):
    print("==> %s" % message, flush=True)


def run(argv, **kwargs):
    print("$ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kwargs)


def definition(tarballs, version):
    """The shipped definition, changed only where this machine differs from a user's."""
    with open(os.path.join(REPO, "docs", "execution-environment.yml"), encoding="utf-8") as handle:
        ee = yaml.safe_load(handle)
    ee = copy.deepcopy(ee)
    ours = "rdmaops-roce-%s.tar.gz" % version
    if ee["additional_build_files"][0]["src"] != ours:
        raise SystemExit("docs/execution-environment.yml builds %s, the release is %s: update it"
                         % (ee["additional_build_files"][0]["src"], ours))
    ee["images"]["base_image"]["name"] = BASE_IMAGE
    ee["dependencies"]["python_interpreter"]["python_path"] = "/usr/bin/python3"
    ee["options"]["package_manager_path"] = "/usr/local/sbin/ee-pkgmgr"
    # Debian's python3-pip is there (Debian's Python refuses ensurepip, which ansible-builder runs).
    ee["options"]["skip_pip_install"] = True
    # No Galaxy here: the dependencies as files too, installed without asking a server.
    for path in tarballs:
        ee["dependencies"]["galaxy"]["collections"].append({"name": "collections/" + os.path.basename(path), "type": "file"})
        ee["additional_build_files"].append({"src": os.path.basename(path), "dest": "collections"})
    ee.setdefault("build_arg_defaults", {})["ANSIBLE_GALAXY_CLI_COLLECTION_OPTS"] = "--offline"
    # This test's hosts are containers on this machine, reached with `podman --remote` through its
    # socket (a site's hosts are reached over SSH, which meta/execution-environment.yml brings).
    ee["dependencies"]["system"] = ["podman [platform:dpkg]"]
    # The socket is root's: the runner runs as root in the container (ansible-builder's default is 1000).
    ee["options"]["user"] = "0"
    return ee


def introspect(venv_bin, work, tarballs):
    """What ansible-builder finds for an EE in the collections (meta/execution-environment.yml)."""
    target = os.path.join(work, "introspect")
    # --force: the development setup already "has" these (this checkout, the `ansible` package).
    run(["ansible-galaxy", "collection", "install", "--offline", "--force", "-p", target] + tarballs,
        stdout=subprocess.DEVNULL, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=target))
    found = yaml.safe_load(subprocess.run([os.path.join(venv_bin, "ansible-builder"), "introspect", "--sanitize", target],
                                          check=True, capture_output=True, text=True).stdout.split("\n", 1)[1])
    ours = [line for kind in ("python", "system") for line in found.get(kind) or [] if "from collection rdmaops.roce" in line]
    print("ansible-builder introspect, rdmaops.roce: %s" % "; ".join(ours))
    if not any(line.startswith("openssh-client [platform:dpkg]") for line in ours):
        raise SystemExit("ansible-builder introspect does not find rdmaops.roce's system requirements: %s" % found)


def build(args, venv_bin, work):
    log("base image")
    run(["bash", os.path.join(HERE, "build-base-image.sh")])
    log("build")
    context = os.path.join(work, "definition")
    os.makedirs(context)
    run(["ansible-galaxy", "collection", "build", "--output-path", context, REPO], cwd=REPO, stdout=subprocess.DEVNULL)
    ours = glob.glob(os.path.join(context, "rdmaops-roce-*.tar.gz"))[0]
    version = os.path.basename(ours)[len("rdmaops-roce-"):-len(".tar.gz")]
    deps = [package_collection.package(fqcn, context) for fqcn in DEPENDENCIES]
    introspect(venv_bin, work, [ours] + deps)
    with open(os.path.join(context, "execution-environment.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(definition(deps, version), handle, sort_keys=False)
    tag = "%s:%s" % (IMAGE, version)
    run([os.path.join(venv_bin, "ansible-builder"), "build", "-f", "execution-environment.yml", "-t", tag,
         "--container-runtime", "podman", "--context", os.path.join(work, "context"), "-v", "2"], cwd=context)
    listed = subprocess.run(["podman", "run", "--rm", tag, "ansible-galaxy", "collection", "list", "--format", "json"],
                            check=True, capture_output=True, text=True).stdout
    found = {name: info["version"] for path in json.loads(listed).values() for name, info in path.items()}
    if found.get("rdmaops.roce") != version or not set(DEPENDENCIES) <= set(found):
        raise SystemExit("the execution environment holds %s" % found)
    print("%s holds %s" % (tag, ", ".join("%s %s" % item for item in sorted(found.items()))))
    size = subprocess.run(["podman", "image", "inspect", "--format", "{{.Size}}", tag], check=True,
                          capture_output=True, text=True).stdout.strip()
    print("image size %d MiB" % (int(size) // 1024 // 1024))
    return tag


def runner(args, venv_bin, work, tag, socket, names):
    data = os.path.join(work, "runner")
    for sub in ("inventory", "project", "env"):
        os.makedirs(os.path.join(data, sub), exist_ok=True)
    hostvars = dict(fleet.HOST_VARS, ansible_podman_extra_args="--remote --url unix://" + SOCKET_IN_EE)
    with open(os.path.join(data, "inventory", "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"rdma_hosts": {"hosts": {n: None for n in names}, "vars": hostvars}}, handle)
    with open(os.path.join(data, "env", "envvars"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"ANSIBLE_NOCOLOR": "1"}, handle)
    # The site's own playbook, as a project in AWX has it: the collection's site.yml by FQCN.
    with open(os.path.join(data, "project", "site.yml"), "w", encoding="utf-8") as handle:
        handle.write("---\n- name: The RoCE fabric\n  ansible.builtin.import_playbook: rdmaops.roce.site\n")
    tags = ",".join(tag_ for tag_, _what in fleet.chosen_layers(skip=("ofed",))[0])
    results = []
    for attempt in ("fresh", "no-op"):
        log("ansible-runner: site.yml --tags %s, %s" % (tags, attempt))
        ident = attempt.replace("-", "")
        start = time.monotonic()
        proc = subprocess.run([os.path.join(venv_bin, "ansible-runner"), "run", data, "-p", "site.yml", "--ident", ident,
                               "--cmdline", "--tags " + tags,
                               "--process-isolation", "--process-isolation-executable", "podman",
                               "--container-image", tag,
                               "--container-volume-mount", "%s:%s" % (socket, SOCKET_IN_EE)],
                              check=False, capture_output=True, text=True)
        wall = time.monotonic() - start
        stats = {}
        for path in glob.glob(os.path.join(data, "artifacts", ident, "job_events", "*.json")):
            with open(path, encoding="utf-8") as handle:
                event = json.load(handle)
            if event.get("event") == "playbook_on_stats":
                stats = event["event_data"]
        tail = "\n".join(proc.stdout.splitlines()[-40:])
        if proc.returncode != 0 or not stats:
            raise SystemExit("ansible-runner failed (rc=%d):\n%s\n%s" % (proc.returncode, tail, proc.stderr[-3000:]))
        changed = {host: stats.get("changed", {}).get(host, 0) for host in names}
        print("\n".join(proc.stdout.splitlines()[-(len(names) + 2):]))
        print("%s run: %.0fs, changed %s" % (attempt, wall, changed))
        results.append((wall, changed))
    if any(results[1][1].values()):
        raise SystemExit("the second run changed something: %s" % results[1][1])
    if not all(results[0][1].values()):
        raise SystemExit("the first run changed nothing on some host: %s" % results[0][1])
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--hosts", type=int, default=2)
    args = parser.parse_args()
    venv_bin = os.path.join(os.path.abspath(args.venv), "bin")
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ["CONTAINERS_CONF"] = fleet.CONTAINERS_CONF
    timings = []
    start = time.monotonic()
    tag = build(args, venv_bin, work)
    timings.append(("base+build", time.monotonic() - start))

    socket = os.path.join(work, "podman.sock")
    service = subprocess.Popen(["podman", "system", "service", "--time=0", "unix://" + socket],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "podman-service.log"), "w"))
    names = ["%s-%02d" % (PREFIX, i) for i in range(1, args.hosts + 1)]
    env = fleet.ansible_env(work)
    fleet.link_collection()
    try:
        for _attempt in range(100):
            if os.path.exists(socket):
                break
            time.sleep(0.1)
        log("hosts: %d containers (molecule/shared/create.yml)" % len(names))
        start = time.monotonic()
        fleet.harness(fleet.CREATE, names, work, env, PREFIX)
        fleet.prepare(names)
        timings.append(("hosts", time.monotonic() - start))
        results = runner(args, venv_bin, work, tag, socket, names)
        timings.append(("site.yml fresh", results[0][0]))
        timings.append(("site.yml no-op", results[1][0]))
    finally:
        log("removing the containers")
        fleet.harness(fleet.DESTROY, names, work, env, PREFIX)
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
    print("ee steps: " + ", ".join("%s %.0fs" % item for item in timings))


if __name__ == "__main__":
    main()
