"""switch_roce's engine in-process, as the module runs it (validate, read, plan, apply, verify, and
the failure path that becomes fail_json), for tests that try many inputs: ``run(**params)`` returns
the module's result (``failed`` and ``msg`` on failure) and its warnings.

Also a SONiC switch in memory (``FakeSonic``), the per-NOS grammar of what the renderers may write
(every line a CLI renderer emits matches one of ``LINE_GRAMMAR[nos]`` whole) and the checks the
hostile-input tests share.
"""

import copy
import re

import jsonpatch

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute, failure
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import resource


class FakeModule:
    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self._diff = True
        self.no_log_values = set()


def run(check_mode=False, **params):
    """``(result, warnings)`` of switch_roce with ``params`` (the module's defaults filled in)."""
    full = dict(state="merged", os=None, mtu_policy="clamp", nos_version=None, config=None, running_config=None)
    full.update(params)
    ctx = Context(FakeModule(check_mode), runner=object())
    engine = resource.SwitchRoce(ctx, full)
    try:
        result, dummy = execute(engine)
    except RdmaopsError as exc:
        result = failure(exc, engine, None)
        result["failed"] = True
    return result, list(ctx.warnings)


# What Python says when code meets a value of a shape it did not expect; none of it may reach a user.
PYTHON_WORDS = re.compile(
    r"Traceback|object has no attribute|not supported between|unhashable|object is not|"
    r"'(list|dict|str|int|float|bool|NoneType|tuple)'|\b(NoneType|KeyError|TypeError|ValueError|IndexError|"
    r"AttributeError|RecursionError|OverflowError)\b|Exceeds the limit|Expecting (value|property)|invalid literal")


def assert_clear(message, names):
    """``message`` names one of ``names`` and carries no Python error text or type name."""
    assert any(name in message for name in names), message
    assert not PYTHON_WORDS.search(message), message
    assert resource.UNFORESEEN not in message, message  # the last-resort guard never had to speak


_NUM = r"(0|[1-9][0-9]*)"
# Every line the CLI renderers write, per NOS (the golden files' forms; names as PORT_NAMES allows).
LINE_GRAMMAR = {
    "eos": [r"!", r"qos profile RDMAOPS_ROCE", r"   qos trust (dscp|cos)", r"   priority-flow-control on",
            r"   no priority-flow-control", r"   priority-flow-control priority [0-7] no-drop",
            r"   priority-flow-control pause watchdog", r"   !", r"   tx-queue [0-7]", r"      (no )?priority( strict)?",
            r"      bandwidth percent %s" % _NUM,
            r"      random-detect ecn minimum-threshold %s (bytes|kbytes|mbytes) maximum-threshold %s (bytes|kbytes|mbytes)"
            r" max-mark-probability %s" % (_NUM, _NUM, _NUM),
            r"interface (?P<port>\S+)", r"   mtu %s" % _NUM, r"   service-profile RDMAOPS_ROCE",
            r"qos map dscp %s to traffic-class [0-7]" % _NUM],
    "nxos": [r"class-map type qos match-all RDMAOPS_(ROCE|CNP)", r"  match dscp %s" % _NUM,
             r"policy-map type (qos RDMAOPS_ROCE_IN|queuing RDMAOPS_ROCE_OUT|network-qos RDMAOPS_ROCE_NQ)",
             r"  class RDMAOPS_(ROCE|CNP)", r"    set qos-group [0-7]",
             r"  class type queuing c-out-8q-q([1-7]|-default)", r"    priority level 1",
             r"    bandwidth remaining percent %s" % _NUM,
             r"    random-detect minimum-threshold %s (bytes|kbytes|mbytes) maximum-threshold %s (bytes|kbytes|mbytes) "
             r"drop-probability %s weight 0 ecn" % (_NUM, _NUM, _NUM),
             r"  class type network-qos c-8q-nq([1-7]|-default)", r"    mtu %s" % _NUM, r"    pause pfc-cos [0-7]",
             r"system qos", r"  service-policy type (network-qos RDMAOPS_ROCE_NQ|queuing output RDMAOPS_ROCE_OUT)",
             r"interface (?P<port>\S+)", r"  mtu %s" % _NUM, r"  priority-flow-control mode (on|off)",
             r"  priority-flow-control watch-dog-interval (on|off)", r"  service-policy type qos input RDMAOPS_ROCE_IN"],
    "onyx": [r"interface ethernet (?P<port>[0-9/]+) mtu %s force" % _NUM,
             r"interface ethernet (?P<port>[0-9/]+) qos trust L3",
             r"interface ethernet (?P<port>[0-9/]+) traffic-class [0-7] congestion-control ecn minimum-absolute %s "
             r"maximum-absolute %s" % (_NUM, _NUM),
             r"interface ethernet (?P<port>[0-9/]+) traffic-class [0-7] dcb ets (strict|wrr %s)" % _NUM,
             r"interface ethernet (?P<port>[0-9/]+) (no )?dcb priority-flow-control mode (on )?force",
             r"dcb priority-flow-control enable force", r"dcb priority-flow-control priority [0-7] enable"],
}
LINE_GRAMMAR = dict((nos, [re.compile(line) for line in lines]) for nos, lines in LINE_GRAMMAR.items())


def ports_in_lines(nos, lines):
    """The port names the rendered ``lines`` write; AssertionError for a line outside the NOS's grammar."""
    ports = []
    for line in lines:
        assert isinstance(line, str) and "\n" not in line and "\r" not in line, line
        found = [pattern.fullmatch(line) for pattern in LINE_GRAMMAR[nos]]
        found = [match for match in found if match]
        assert found, "%s line outside the grammar: %r" % (nos, line)
        port = found[0].groupdict().get("port")
        if port is not None and port not in ports:
            ports.append(port)
    return ports


class FakeSonic:
    """A SONiC switch in memory: its CONFIG_DB as ``sonic-cfggen -d --print-data`` prints it, taking
    RFC 6902 patches as ``config apply-patch`` does; ``applied`` lists the patches it took (a test of
    a refusal asserts it stays empty)."""

    def __init__(self, config_db):
        self.config_db = copy.deepcopy(config_db)
        self.applied = []

    def version(self):
        return "202411"

    def read(self):
        return copy.deepcopy(self.config_db)

    def apply(self, ops):
        self.config_db = jsonpatch.apply_patch(self.config_db, ops)
        self.applied.append(ops)


# What a SONiC switch with two ports and the dynamic buffer model holds before the profile.
SONIC_BASE = {"PORT": {"Ethernet0": {"mtu": "9100"}, "Ethernet4": {"mtu": "9100"}},
              "DEVICE_METADATA": {"localhost": {"buffer_model": "dynamic"}},
              "BUFFER_PROFILE": {"egress_lossless_profile": {}}}
