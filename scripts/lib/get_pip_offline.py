"""Stand-in for the get-pip.py that ansible-test downloads to bootstrap its virtualenvs.

ansible-test fetches get-pip.py from a host this project's machines cannot reach, and uses a
cached copy from ~/.ansible/test/cache/get_pip_<version>.py when one exists.  This script
does the same job with what Python already ships: ensurepip, then pip installs the
requested packages (pip==<version> ...) from the configured package index.
"""

import subprocess
import sys

args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
