# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Port names: the one rule per NOS that every interface name passes before it reaches a CLI line,
an NVUE body or a CONFIG_DB key.

A name is configuration text: ``Ethernet1\\ninterface Management1\\n   shutdown`` is three EOS lines,
``Ethernet0|3-4`` another CONFIG_DB key.  Each driver names its rule (``PORT_NAMES``, a
:class:`PortNames`): the forms its NOS gives the ports the profile goes on, matched whole.  The
engine (``resource.py``) applies it in one place for every state:

- ``config.interfaces`` (the user's names): a name that breaks the rule is refused, naming
  ``config.interfaces`` and showing the form the NOS expects, before anything is read or rendered;
- names read back (``parsed`` text, the switch's configuration in ``gathered`` and the acting
  states): a name that breaks it is left out of what is reported, with a warning naming it; a plan
  whose commands would name it is refused (see :func:`refuse_in_commands`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError

# The longest name shown in a message: enough to recognise it, never a page of it.
SHOWN = 60
# The most problems one message lists: a list of 100,000 bad names is a message of a few lines.
LISTED = 10


def show(name):
    """``name`` as a message may print it: quoted, control characters escaped, cut when long."""
    if not isinstance(name, str):
        return "a value that is not text"
    text = json.dumps(name[:SHOWN])
    return text if len(name) <= SHOWN else text[:-1] + '..."'


def _listed(problems):
    """The first :data:`LISTED` of ``problems`` joined for a message, saying how many more there are."""
    text = "; ".join(problems[:LISTED])
    if len(problems) > LISTED:
        text += "; and %d more" % (len(problems) - LISTED)
    return text


class PortNames(object):
    """The names a NOS gives the ports the profile goes on.

    ``pattern``   the accepted forms, matched whole (re.fullmatch: a trailing newline is no name)
    ``forms``     the accepted forms in words, with examples ("Ethernet1, Ethernet1/1 ...")
    ``refused``   ``(pattern, why)``: names of the NOS that never carry the profile, and why
                  (management ports, port channels SONiC's QoS tables do not take)
    ``max_length`` the longest name the NOS takes (Linux interface names: 15 characters)
    """

    def __init__(self, nos, pattern, forms, refused=(), max_length=None):
        self.nos = nos
        self.pattern = re.compile(pattern)
        self.forms = forms
        self.refused = [(re.compile(refused_pattern), why) for refused_pattern, why in refused]
        self.max_length = max_length

    def problem(self, name):
        """None when ``name`` is a port name of the NOS; otherwise why not, with the expected form."""
        if not isinstance(name, str):
            return "an interface name is text, e.g. %s" % self.forms
        for pattern, why in self.refused:
            if pattern.fullmatch(name):
                return "%s %s" % (show(name), why)
        if self.max_length is not None and len(name) > self.max_length:
            return "%s is longer than the %d characters %s takes for an interface name" % (
                show(name), self.max_length, self.nos)
        if not self.pattern.fullmatch(name):
            return "%s is not a port name of %s: name ports as it does: %s" % (show(name), self.nos, self.forms)
        return None


def check_config_interfaces(rule, config):
    """Refuse ``config.interfaces`` unless every name follows ``rule`` (any state, before anything
    is read or rendered).  ``config`` is the module's ``config`` (None or not a mapping: nothing to
    check here, the state's own checks say what is missing)."""
    if not isinstance(config, dict) or config.get("interfaces") is None:
        return
    interfaces = config["interfaces"]
    if not isinstance(interfaces, list):
        raise InputError("config.interfaces must be a list of the switch's port names, e.g. %s" % rule.forms,
                         option="config.interfaces")
    problems = []
    for index, name in enumerate(interfaces):
        why = rule.problem(name)
        if why:
            problems.append("config.interfaces[%d]: %s" % (index, why))
    if problems:
        raise InputError(_listed(problems), option="config.interfaces", problems=problems[:LISTED],
                         problem_count=len(problems))


def filter_read_back(rule, found, source, warn):
    """``found`` (``{"fabric": ..., "interfaces": [...]}`` as a parser returned it) without the
    interfaces that break ``rule``; each left out is named in a warning (``source``: where the
    names came from, "running_config" or the switch's configuration)."""
    if not isinstance(found, dict):
        return found
    kept, left_out = [], 0
    for name in found.get("interfaces") or []:
        why = rule.problem(name)
        if not why:
            kept.append(name)
            continue
        left_out += 1
        if left_out <= LISTED:  # a warning each for the first ones, then one that counts the rest
            warn("%s names an interface this module does not read, left out of the result: %s" % (source, why))
    if left_out > LISTED:
        warn("%s names %d more interfaces this module does not read, left out of the result"
             % (source, left_out - LISTED))
    result = dict(found)
    result["interfaces"] = kept
    return result


def refuse_in_commands(rule, names, state):
    """Refuse a plan whose commands name an interface that breaks ``rule`` (one the switch holds
    the profile on, under a name this module never writes): nothing is sent."""
    bad = [rule.problem(name) for name in names]
    bad = [why for why in bad if why]
    if bad:
        raise RefusedError(
            "state=%s would have to change interface(s) the switch holds under a name this module never writes "
            "(%s); nothing was sent: fix the name on the switch, or list the ports to change in config.interfaces "
            "with state replaced or deleted" % (state, _listed(bad)), problems=bad[:LISTED], problem_count=len(bad))
