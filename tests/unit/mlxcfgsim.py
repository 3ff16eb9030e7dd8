"""The mlxconfig/mstconfig stand-ins (tests/tools/mlxconfig_standins) seen through a module: no
ConnectX exists on the project's machines, so the engines run the stand-ins for real."""

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDINS = os.path.join(REPO, "tests", "tools", "mlxconfig_standins")
# the composed ConnectX-7 -e q output that seeds the stand-ins (its README says how it was made)
SEED = os.path.join(REPO, "tests", "unit", "fixtures", "tools", "mlxconfig", "cx7-e-q-composed.txt")


class FakeModule:
    """run_command runs the stand-ins for real; get_bin_path sees only the tools given."""

    def __init__(self, params, env, tools=("mlxconfig", "mstconfig"), check_mode=False):
        self.params = params
        self.check_mode = check_mode
        self._diff = False
        self.env = env
        self.tools = tools

    def get_bin_path(self, tool):
        return os.path.join(STANDINS, tool) if tool in self.tools else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=False):
        env = dict(os.environ, **self.env)
        env.update(environ_update or {})
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def reboot(env):
    """Next Boot becomes Current, as a firmware reload does (the stand-in's own command)."""
    subprocess.run([os.path.join(STANDINS, "mlxconfig"), "_standin_reboot"], env=dict(os.environ, **env), check=True)


def environment(tmp_path, aliases="3d:00.0"):
    """The stand-ins' environment for one test: the seed, a state file, an argv log under ``tmp_path``."""
    return dict(MLXCFG_STANDIN_SEED=SEED, MLXCFG_STANDIN_STATE=str(tmp_path / "state.json"),
                MLXCFG_STANDIN_LOG=str(tmp_path / "argv.log"), MLXCFG_STANDIN_ALIASES=aliases)
