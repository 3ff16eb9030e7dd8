"""Render the monitor role's rules template as the role's template task does (``[[ ]]`` variables,
trim_blocks), from the role's defaults or other values."""

import os

import jinja2
import yaml

ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))),
                    "roles", "monitor")
RULES_FILE = os.path.join(ROLE, "files", "rdmaops-roce.rules.yml")


def defaults():
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)


def render(**overrides):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")), trim_blocks=True,
                             variable_start_string="[[", variable_end_string="]]", undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    values = defaults()
    values.update(overrides)
    return env.get_template("rdmaops-roce.rules.yml.j2").render(**values)


if __name__ == "__main__":
    # python tests/unit/roles/monitor/rules.py: rewrite files/rdmaops-roce.rules.yml from the defaults
    with open(RULES_FILE, "w") as handle:
        handle.write(render())
