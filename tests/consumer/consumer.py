"""The collection as another team gets it: built, installed offline into an empty project, used there.

    python tests/consumer/consumer.py --venv build/venvs/consumer --work build/consumer

``--venv`` is a virtualenv with plain ansible-core and nothing else (requirements-consumer.txt, or
requirements-core216.txt for the lowest core we claim). Every ansible command runs from it with a
fresh HOME, no ANSIBLE_* variable from this shell and ANSIBLE_COLLECTIONS_PATH naming only the
project's install directory, so nothing of this checkout or of the development venv's `ansible`
package can be found. This script itself runs in the development venv: it plays the NVUE switch
(tests/tools/nvue_standin, which needs nvueschema) and makes the dependency tarballs.

Steps (each fails the run with what went wrong):
  build     ansible-galaxy collection build; no development files inside, CHANGELOG.rst inside,
            every relative link of the shipped Markdown resolves inside the tarball
  deps      ansible.netcommon and ansible.utils tarballs made from the collections the pinned
            `ansible` package ships (package_collection.py)
  install   ansible-galaxy collection install --offline -r requirements.yml (type: file entries,
            as a site without Galaxy access writes it); `collection list` shows exactly ours and
            its dependency chain
  doc       ansible-doc for every plugin and role the tarball carries, with no warning (a
            requires_ansible that excludes this core would warn)
  switch    site.yml's switch play (`ansible-playbook rdmaops.roce.site --tags switch`) against the
            NVUE stand-in: the intent applied once, changed=0 the second time
  playbook  tests/consumer/playbook.yml: roles and a module_defaults action group by FQCN
  site      `ansible-playbook rdmaops.roce.site --check --tags preflight,facts` on this machine
"""

import argparse
import glob
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
sys.path.insert(0, os.path.join(REPO, "tests", "tools", "nvue_standin"))

import package_collection  # noqa: E402

# What must never ship (galaxy.yml build_ignore), by tarball path prefix.
NOT_SHIPPED = ("tests/", "scripts/", ".ci/", ".ansible/", "build/", "molecule/", "benchmarks/", ".venv/",
               "changelogs/fragments/", "docs/benchmarks.", "CONTRIBUTING.md",
               "inventories/lab/", "inventories/local/", "requirements-")
DEPENDENCIES = ("ansible.netcommon", "ansible.utils")  # ours, and netcommon's own
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def log(message):
    print("==> %s" % message, flush=True)


class Consumer:
    def __init__(self, venv, work):
        self.venv = os.path.abspath(venv)
        self.work = os.path.abspath(work)
        self.project = os.path.join(self.work, "project")
        self.collections = os.path.join(self.project, "collections")

    def env(self, **extra):
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV", "RDMAOPS_"))}
        env.update(
            PATH=os.pathsep.join([os.path.join(self.venv, "bin"), "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]),
            HOME=os.path.join(self.work, "home"),
            ANSIBLE_COLLECTIONS_PATH=self.collections,
            ANSIBLE_LOCALHOST_WARNING="0",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
        )
        env.update(extra)
        return env

    def run(self, tool, *args, check=True, env=None, cwd=None, timeout=300):
        argv = [os.path.join(self.venv, "bin", tool)] + [str(arg) for arg in args]
        proc = subprocess.run(argv, env=env or self.env(), cwd=cwd or self.project, capture_output=True,
                              text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise SystemExit("%s failed (rc=%d):\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-6000:], proc.stderr[-6000:]))
        return proc


# --- build -----------------------------------------------------------------------------------------

def check_tarball(tarball):
    with tarfile.open(tarball) as tar:
        names = [name[2:] if name.startswith("./") else name for name in tar.getnames()]
        files = [name for name in names if tar.getmember(name).isfile()]
        markdown = {name: tar.extractfile(name).read().decode("utf-8") for name in names
                    if name.endswith(".md") and tar.getmember(name).isfile()}
    shipped = [name for name in names if name.startswith(NOT_SHIPPED)]
    if shipped:
        raise SystemExit("the tarball carries development files (galaxy.yml build_ignore): %s" % ", ".join(shipped[:20]))
    # Nothing that the checkout does not hold either (build outputs, caches, ansible-lint's .ansible/).
    checkout = set(subprocess.run(["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard"],
                                  check=True, capture_output=True, text=True).stdout.splitlines())
    generated = {"MANIFEST.json", "FILES.json"}
    stray = [name for name in files if name not in checkout and name not in generated]
    if stray:
        raise SystemExit("the tarball carries files that are not part of the checkout: %s" % ", ".join(stray[:20]))
    for required in ("README.md", "CHANGELOG.rst", "COPYING", "meta/runtime.yml", "meta/execution-environment.yml"):
        if required not in names:
            raise SystemExit("the tarball lacks %s" % required)
    broken = broken_links(markdown, set(names))
    if broken:
        raise SystemExit("links in the shipped Markdown that lead nowhere inside the tarball:\n  " + "\n  ".join(broken))
    return names, markdown


def broken_links(markdown, names):
    """Every relative link of every Markdown file that names no file or directory in the tarball."""
    dirs = {posixpath.dirname(name) for name in names}
    while "" not in dirs and dirs:
        dirs |= {posixpath.dirname(d) for d in dirs}
    broken = []
    for source, text in sorted(markdown.items()):
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # links in code blocks are examples
        for target in MARKDOWN_LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # URLs and anchors in the same file
            path = posixpath.normpath(posixpath.join(posixpath.dirname(source), target.split("#")[0]))
            if path not in names and path not in dirs:
                broken.append("%s -> %s" % (source, target))
    return broken


# --- the steps -------------------------------------------------------------------------------------

def build(consumer):
    dist = os.path.join(consumer.work, "dist")
    os.makedirs(dist)
    consumer.run("ansible-galaxy", "collection", "build", "--output-path", dist, REPO, cwd=REPO)
    tarball = glob.glob(os.path.join(dist, "rdmaops-roce-*.tar.gz"))[0]
    names, markdown = check_tarball(tarball)
    print("built %s (%d KiB, %d entries, %d Markdown files, their links resolve inside it)"
          % (os.path.basename(tarball), os.path.getsize(tarball) // 1024, len(names), len(markdown)))
    return tarball


def dependencies(consumer):
    deps = os.path.join(consumer.work, "deps")
    os.makedirs(deps)
    tarballs = [package_collection.package(fqcn, deps) for fqcn in DEPENDENCIES]
    print("dependency tarballs from the `ansible` package: %s" % ", ".join(os.path.basename(t) for t in tarballs))
    return tarballs


def install(consumer, tarball, deps):
    requirements = {"collections": [{"name": path, "type": "file"} for path in [tarball] + deps]}
    with open(os.path.join(consumer.project, "requirements.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(requirements, handle)
    proc = consumer.run("ansible-galaxy", "collection", "install", "--offline", "-r", "requirements.yml", "-p", consumer.collections)
    print("\n".join(line for line in proc.stdout.splitlines() if "installed successfully" in line))
    listed = json.loads(consumer.run("ansible-galaxy", "collection", "list", "--format", "json").stdout)
    found = {}
    for path, collections in listed.items():
        if os.path.realpath(path).startswith(os.path.realpath(consumer.venv)) and set(collections) <= {"ansible._protomatter"}:
            continue  # ansible-core's own internal collection (2.19)
        if os.path.realpath(path) != os.path.realpath(os.path.join(consumer.collections, "ansible_collections")):
            raise SystemExit("collections found outside the project: %s: %s" % (path, sorted(collections)))
        found.update(collections)
    if sorted(found) != sorted(("rdmaops.roce",) + DEPENDENCIES):
        raise SystemExit("the project should hold rdmaops.roce and %s, holds %s" % (", ".join(DEPENDENCIES), sorted(found)))
    with open(os.path.join(consumer.collections, "ansible_collections", "rdmaops", "roce", "MANIFEST.json"), encoding="utf-8") as handle:
        declared = json.load(handle)["collection_info"]["dependencies"]
    print("collection list: %s (declared: %s)" % (", ".join("%s %s" % (k, v["version"]) for k, v in sorted(found.items())), declared))


def docs(consumer, names):
    plugin_types = {"modules": "module", "filter": "filter", "httpapi": "httpapi", "connection": "connection",
                    "lookup": "lookup", "callback": "callback", "inventory": "inventory", "test": "test"}
    counted = []
    for directory, plugin_type in sorted(plugin_types.items()):
        shipped = sorted({posixpath.splitext(posixpath.basename(n))[0] for n in names
                          if posixpath.dirname(n) == "plugins/" + directory and n.endswith((".py", ".yml"))
                          and not posixpath.basename(n).startswith("_")})
        if not shipped:
            continue
        fqcns = ["rdmaops.roce." + name for name in shipped]
        proc = consumer.run("ansible-doc", "-t", plugin_type, "--json", *fqcns)
        data = json.loads(proc.stdout)
        missing = [f for f in fqcns if not (data.get(f) or {}).get("doc")]
        warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
        if missing or warnings:
            raise SystemExit("ansible-doc -t %s: no documentation for %s\n%s" % (plugin_type, missing, "\n".join(warnings)))
        # ...and as text, which renders every field (a requirement that is not a string fails only here).
        text = consumer.run("ansible-doc", "-t", plugin_type, *fqcns, check=False)
        if text.returncode != 0 or "ERROR" in text.stderr:
            raise SystemExit("ansible-doc -t %s (text) failed:\n%s" % (plugin_type, text.stderr[-3000:]))
        counted.append("%d %s" % (len(fqcns), plugin_type))
    roles = sorted({n.split("/")[1] for n in names if n.startswith("roles/") and n.endswith("meta/argument_specs.yml")})
    proc = consumer.run("ansible-doc", "-t", "role", "--json", *["rdmaops.roce." + role for role in roles])
    documented = json.loads(proc.stdout)
    if sorted(documented) != sorted("rdmaops.roce." + role for role in roles) or "WARNING" in proc.stderr:
        raise SystemExit("ansible-doc -t role: documented %s of %s\n%s" % (sorted(documented), roles, proc.stderr))
    counted.append("%d role" % len(roles))
    print("ansible-doc documented %s, no warning" % ", ".join(counted))


RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def recap(proc):
    return {m.group(1): dict(ok=int(m.group(2)), changed=int(m.group(3)), unreachable=int(m.group(4)),
                             failed=int(m.group(5))) for m in RECAP.finditer(proc.stdout)}


def switch_play(consumer):
    import nvuesite  # the stand-in and the inventory variables of a Cumulus leaf reached over NVUE's API

    site = os.path.join(consumer.work, "site")
    os.makedirs(os.path.join(site, "group_vars"))
    fabric = {"preset": "lossless", "roce_dscp": 26, "roce_priority": 3, "cnp_dscp": 48, "cnp_priority": 6,
              "host_mtu": 9000, "switch_mtu": 9216}
    with nvuesite.standin("5.14") as switch:
        leaf = nvuesite.host_vars(switch, ansible_python_interpreter=os.path.join(consumer.venv, "bin", "python"),
                                  switch_roce_interfaces=["swp1", "swp2"])
        inventory = {"all": {"children": {"rdma_hosts": {"hosts": {}},
                                          "leaf_switches": {"children": {"leaf_cumulus": {"hosts": {"leaf01": leaf}}}}}}}
        with open(os.path.join(site, "hosts.yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(inventory, handle)
        with open(os.path.join(site, "group_vars", "all.yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump({"roce_fabric": fabric}, handle)
        env = consumer.env(ANSIBLE_PERSISTENT_CONTROL_PATH_DIR=os.path.join(consumer.work, "pc"))
        results = []
        for attempt in ("first", "second"):
            proc = consumer.run("ansible-playbook", "-i", os.path.join(site, "hosts.yml"), "rdmaops.roce.site",
                                "--tags", "switch", env=env, check=False)
            stats = recap(proc).get("leaf01")
            if proc.returncode != 0 or not stats:
                raise SystemExit("site.yml's switch play failed (%s run, rc=%d):\n%s\n%s"
                                 % (attempt, proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:]))
            results.append(stats)
        applied = switch.applied
        revisions = len(nvuesite.revisions_created(switch))
    if results[0]["changed"] != 1 or results[1]["changed"] != 0 or revisions != 1:
        raise SystemExit("site.yml's switch play: changed %d then %d, %d NVUE revisions (want 1, 0, 1)"
                         % (results[0]["changed"], results[1]["changed"], revisions))
    if applied.get("qos", {}).get("roce") != {"enable": "on", "mode": "lossless"}:
        raise SystemExit("the stand-in's applied configuration lacks the intent: %s" % json.dumps(applied.get("qos")))
    print("rdmaops.roce.site --tags switch on the NVUE 5.14 stand-in: changed=1 (one revision), then changed=0")


def user_playbook(consumer):
    import hosttree

    tree = os.path.join(consumer.work, "host-tree")
    hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), tree)
    proc = consumer.run("ansible-playbook", "-i", "localhost,", "-c", "local",
                        "-e", "ansible_python_interpreter=" + os.path.join(consumer.venv, "bin", "python"),
                        "-e", "consumer_host_tree=" + tree, os.path.join(HERE, "playbook.yml"), check=False)
    stats = recap(proc).get("localhost")
    if proc.returncode != 0 or not stats or stats["failed"]:
        raise SystemExit("tests/consumer/playbook.yml failed (rc=%d):\n%s\n%s" % (proc.returncode, proc.stdout[-8000:], proc.stderr[-3000:]))
    print("tests/consumer/playbook.yml: ok=%(ok)d changed=%(changed)d failed=%(failed)d" % stats)


def site_check(consumer):
    inventory = os.path.join(consumer.work, "local.yml")
    with open(inventory, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"rdma_hosts": {"hosts": {"localhost": {"ansible_connection": "local"}}}}, handle)
    proc = consumer.run("ansible-playbook", "-i", inventory, "-e", "ansible_python_interpreter=" + os.path.join(consumer.venv, "bin", "python"),
                        "--check", "--tags", "preflight,facts", "rdmaops.roce.site", check=False)
    stats = recap(proc).get("localhost")
    if proc.returncode != 0 or not stats:
        raise SystemExit("rdmaops.roce.site --check --tags preflight,facts failed (rc=%d):\n%s\n%s"
                         % (proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:]))
    print("rdmaops.roce.site --check --tags preflight,facts on this machine: ok=%(ok)d changed=%(changed)d" % stats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--venv", required=True, help="a virtualenv with plain ansible-core")
    parser.add_argument("--work", required=True, help="an empty directory for the project (emptied first)")
    args = parser.parse_args()
    consumer = Consumer(args.venv, args.work)
    shutil.rmtree(consumer.work, ignore_errors=True)
    for directory in (consumer.project, os.path.join(consumer.work, "home")):
        os.makedirs(directory)
    core = consumer.run("ansible", "--version").stdout.splitlines()[0]
    log("consumer on %s (%s)" % (core, consumer.venv))
    timings = []

    def step(name, function, *args):
        start = time.monotonic()
        log(name)
        result = function(*args)
        timings.append((name, time.monotonic() - start))
        return result

    tarball = step("build", build, consumer)
    deps = step("deps", dependencies, consumer)
    names, _markdown = check_tarball(tarball)
    step("install", install, consumer, tarball, deps)
    step("doc", docs, consumer, names)
    step("switch", switch_play, consumer)
    step("playbook", user_playbook, consumer)
    step("site", site_check, consumer)
    print("consumer steps: " + ", ".join("%s %.0fs" % item for item in timings))


if __name__ == "__main__":
    main()
