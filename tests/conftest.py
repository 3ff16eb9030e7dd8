"""Make ``ansible_collections.rdmaops.roce`` importable from this checkout.

The collection's Python code imports itself by its full name, so the tests put a
``ansible_collections/rdmaops/roce`` link to the repository root on ``sys.path`` (and
export the same tree as ANSIBLE_COLLECTIONS_PATH for tests that run ansible itself).
"""

import hashlib
import os
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _collections_root():
    # An existing ansible_collections tree (ansible-test, a checkout under one) wins.
    parts = REPO_ROOT.split(os.sep)
    if len(parts) >= 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3])
    # One tree per checkout: worktrees and clean clones testing side by side must not
    # repoint each other's link.
    checkout = hashlib.sha256(REPO_ROOT.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    root = os.path.join(tempfile.gettempdir(), "rdmaops-roce-collections-%d-%s" % (os.getuid(), checkout))
    link = os.path.join(root, "ansible_collections", "rdmaops", "roce")
    if os.path.realpath(link) != REPO_ROOT:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(REPO_ROOT, link)
    return root


# Hypothesis keeps a cache of constants under .hypothesis/ in the working directory even
# with database=None; keep it in build/ (ignored by git and by galaxy.yml) so a test run
# never leaves files that the collection tarball would carry.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(REPO_ROOT, "build", "hypothesis"))

# The hostile-input tests draw their cases with hypothesis. By default the draws are the same on
# every run (derandomized), so CI's verdict on a commit does not depend on the luck of the draw and a
# failure is reproduced by running the test again. HYPOTHESIS_PROFILE=explore draws new cases on each
# run, for looking for new failures before a change is committed.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the consumer and core216 tiers run without it
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("repeatable", derandomize=True)
    _hypothesis_settings.register_profile("explore", derandomize=False)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

COLLECTIONS_ROOT = _collections_root()
if COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, COLLECTIONS_ROOT)
os.environ["RDMAOPS_TEST_COLLECTIONS_ROOT"] = COLLECTIONS_ROOT
