"""Make an installable collection tarball from a collection that a pip package ships.

The ``ansible`` package (pinned in requirements-dev.txt) carries ansible.netcommon and
ansible.utils as installed collections, without some of the files their FILES.json lists (dot
files, tests). ``ansible-galaxy collection install`` verifies a tarball against its FILES.json, so
this writes a FILES.json of the files that are there (with their sha256) and a MANIFEST.json that
points at it, and tars them the way ``ansible-galaxy collection build`` does: members relative to
the collection root, MANIFEST.json and FILES.json first.

    python tests/consumer/package_collection.py ansible.netcommon OUTDIR   -> OUTDIR/ansible-netcommon-X.Y.Z.tar.gz
"""

import hashlib
import importlib
import io
import json
import os
import sys
import tarfile


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()


def _members(root):
    """Every directory and file under ``root`` that an install keeps (no caches, no metadata files)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames:
            yield "dir", os.path.normpath(os.path.join(rel_dir, name))
        for name in sorted(filenames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in ("MANIFEST.json", "FILES.json") or name.endswith(".pyc"):
                continue
            yield "file", rel


def package(fqcn, outdir):
    namespace, name = fqcn.split(".")
    module = importlib.import_module("ansible_collections.%s.%s" % (namespace, name))
    root = list(module.__path__)[0]
    with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    files = [{"name": ".", "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1}]
    for ftype, rel in _members(root):
        files.append({"name": rel, "ftype": ftype, "chksum_type": "sha256" if ftype == "file" else None,
                      "chksum_sha256": _sha256(os.path.join(root, rel)) if ftype == "file" else None,
                      "format": 1})
    files_json = json.dumps({"files": files, "format": 1}, indent=4).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    manifest_json = json.dumps(manifest, indent=4).encode()
    info = manifest["collection_info"]
    out = os.path.join(outdir, "%s-%s-%s.tar.gz" % (namespace, name, info["version"]))
    with tarfile.open(out, "w:gz") as tar:
        for member, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            entry = tarfile.TarInfo(member)
            entry.size, entry.mode = len(data), 0o644
            tar.addfile(entry, io.BytesIO(data))
        for item in files[1:]:
            tar.add(os.path.join(root, item["name"]), arcname=item["name"], recursive=False)
    return out


if __name__ == "__main__":
    print(package(sys.argv[1], sys.argv[2]))
