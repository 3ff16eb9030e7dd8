# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plans: the *plan* step of the read -> plan -> apply -> re-read rhythm.

A module reads the current state, then adds one :class:`Change` per thing that differs from
what was asked.  ``changed`` is simply "the plan is not empty", check mode stops before
:meth:`Plan.apply`, and diff mode shows the ``before``/``after`` every change recorded.
Nothing is ever changed because a command ran; things change because they differed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class Change:
    """One ordered step: what differs, how to describe it, and how to make it so."""

    __slots__ = ("key", "before", "after", "action", "description", "header")

    def __init__(self, key, before, after, action, description, header=None):
        self.key = key
        self.before = before
        self.after = after
        self.action = action
        self.description = description
        # A header marks text content (a file): its diff is shown as a unified text diff.
        self.header = header


class Plan:
    """An ordered list of changes with the results Ansible expects from them."""

    def __init__(self):
        self._changes = []

    def add(self, key, before, after, action, description, header=None):
        """Add a change when ``before`` differs from ``after``; return whether it was added."""
        if before == after:
            return False
        self._changes.append(Change(key, before, after, action, description, header))
        return True

    def __iter__(self):
        return iter(self._changes)

    def __len__(self):
        return len(self._changes)

    @property
    def changed(self):
        return bool(self._changes)

    def descriptions(self):
        return [change.description for change in self._changes]

    def diff(self):
        """Ansible diff: one entry for structured values, one per text file."""
        entries = []
        before, after = {}, {}
        for change in self._changes:
            if change.header is not None:
                entries.append(
                    dict(
                        before=change.before or "",
                        after=change.after or "",
                        before_header=change.header,
                        after_header=change.header,
                    )
                )
            else:
                before[change.key] = change.before
                after[change.key] = change.after
        if before or after:
            entries.insert(0, dict(before=before, after=after))
        return entries

    def apply(self, check_mode):
        """Run every change in order unless in check mode; return the descriptions acted on."""
        if check_mode:
            return []
        done = []
        for change in self._changes:
            change.action()
            done.append(change.description)
        return done

    def result(self, check_mode, diff_mode):
        """The common part of a state-changing module's result."""
        result = dict(changed=self.changed, changes=self.descriptions())
        if diff_mode:
            result["diff"] = self.diff()
        return result
