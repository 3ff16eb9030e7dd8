# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plans: the *plan* and *apply* steps of the read -> plan -> apply -> re-read rhythm.

An engine reads the current state, then adds one :class:`Change` per thing that differs from
what was asked.  ``changed`` is "the plan is not empty", check mode stops before
:meth:`Plan.apply`, and diff mode shows the ``before``/``after`` every change recorded.
Nothing is ever changed because a command ran; things change because they differed.

Failures tell the truth, decided here per kind of change, not per module:

* a **file** change (:meth:`Plan.file`) can always be undone: the old bytes are put back;
* a **runtime** change may name its ``undo`` (setting the old MTU again); one that cannot be
  undone safely (loading a kernel module under a running workload) names none;
* a **step** (:meth:`Plan.then`: ``netplan generate``, ``apt-get update``) runs after the changes
  and only when there are any; a step that ``validates`` the changes rolls them back when it fails.

When applying stops part-way, every applied change that has an undo is undone (newest first)
and :class:`ApplyError` says what is still applied, what was rolled back and what was never
reached; the engine then reports ``failed`` with ``changed`` true exactly when something is
still applied.

Every change and step also says how disruptive it is to a workload running on the host
(:data:`DISRUPTION_CLASSES`, least first): ``online`` (a sysctl, a file, loading a module, the
ToS of new connections), ``link_reset`` (PFC, trust, buffers, ETS, the MTU of a link, ring sizes:
every RDMA connection over the port breaks), ``driver_restart`` (unloading or reloading a module,
restarting the driver stack), ``reboot`` (firmware next-boot values, kernel arguments).  The plan
reports the highest class of what it would change (``none`` when nothing), in check mode too, so
a rollout can drain a host before a disruptive change and change the others in place.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError


#: How disruptive a change is to a running workload, least first.
DISRUPTION_CLASSES = ("none", "online", "link_reset", "driver_restart", "reboot")
NONE, ONLINE, LINK_RESET, DRIVER_RESTART, REBOOT = DISRUPTION_CLASSES


def max_disruption_spec():
    """The argument spec of ``max_disruption``, the cap on a run's disruption, for every module that
    takes it (its documentation is the ``rdmaops.roce.disruption`` doc fragment)."""
    return dict(type="str", choices=list(DISRUPTION_CLASSES))


def disruption_rank(name):
    """The position of class ``name`` in :data:`DISRUPTION_CLASSES` (ValueError for another name)."""
    return DISRUPTION_CLASSES.index(name)


def highest_disruption(names):
    """The most disruptive of ``names`` (``none`` for none)."""
    return max(names, key=disruption_rank) if names else NONE


def _checked_class(name):
    if name not in DISRUPTION_CLASSES[1:]:
        # A programming error of an engine, not a user input: fail loudly in the tests.
        raise ValueError("unknown disruption class %r" % (name,))
    return name


class ApplyError(RdmaopsError):
    """Applying stopped part-way; ``applied``/``rolled_back``/``not_applied`` say where."""

    def __init__(self, cause, applied, rolled_back, not_applied, rollback_failed):
        msg = cause.msg if isinstance(cause, RdmaopsError) else "%s" % (cause,)
        if rollback_failed:
            msg += "; rolling back also failed for: %s" % "; ".join(rollback_failed)
        details = dict(cause.details) if isinstance(cause, RdmaopsError) else {}
        details.update(applied=applied, rolled_back=rolled_back, not_applied=not_applied)
        if rollback_failed:
            details["rollback_failed"] = rollback_failed
        super(ApplyError, self).__init__(msg, **details)
        self.cause = cause
        self.applied = applied


class Change:
    """One ordered step: what differs, how to describe it, how to make it so and how to undo it."""

    __slots__ = ("key", "before", "after", "action", "description", "header", "undo", "disruption", "shown")

    def __init__(self, key, before, after, action, description, header=None, undo=None, disruption=ONLINE, shown=None):
        self.key = key
        self.disruption = _checked_class(disruption)
        self.before = before
        self.after = after
        self.action = action
        self.description = description
        # A header marks text content (a file): its diff is shown as a unified text diff.
        self.header = header
        self.undo = undo
        # how the diff shows a text (a generated file too large to read whole, summarised)
        self.shown = shown


class Step:
    """Something to run once the changes are made (activation, cache refresh)."""

    __slots__ = ("description", "action", "validates", "disruption")

    def __init__(self, description, action, validates, disruption=ONLINE):
        self.disruption = _checked_class(disruption)
        self.description = description
        self.action = action
        self.validates = validates


class Plan:
    """An ordered list of changes with the results Ansible expects from them."""

    def __init__(self):
        self._changes = []
        self._steps = []
        self.applied = []
        self.rolled_back = []
        # Keys of changes whose action ran but which the host refused (a sysctl the kernel
        # rejects under runtime_errors=warn, a knob the driver does not have): nothing changed.
        self._refused = set()

    def add(self, key, before, after, action, description, header=None, undo=None, disruption=ONLINE, shown=None):
        """Add a change when ``before`` differs from ``after``; return whether it was added.

        ``disruption`` is the change's class (:data:`DISRUPTION_CLASSES`): what a workload on the
        host suffers when it is applied."""
        if before == after:
            return False
        self._changes.append(Change(key, before, after, action, description, header, undo, disruption, shown))
        return True

    def file(self, host, path, text, mode=0o644, description=None, key=None, adopt=False, option=None, render=None,
             disruption=ONLINE, shown=None):
        """Plan ``path`` to hold ``text`` (None: to be absent).  Refuses files we do not own;
        the change undoes itself by putting the old bytes back.

        ``shown``, when given, maps the file's old and new text to what the diff shows of them (a
        generated file too large to read whole); what is written is always ``text``.

        ``render``, when given, computes the content again when the change is applied (it may
        depend on what earlier changes of the plan achieved); content equal to what the file
        holds then makes the change refused: nothing is written and nothing counts as changed.
        """
        current = files.read_text(host, path)
        if current == text:
            return False
        if text is None or current is not None:
            files.check_owned(host, path, adopt=adopt, option=option)
        saved = {}
        change_key = key or path

        def action():
            content = text if render is None else render()
            if content == current:
                self.refuse(change_key)
                return
            saved.update(files.snapshot(host, path))
            if content is None:
                files.remove(host, path)
            else:
                files.write_atomic(host, path, content, mode=mode, makedirs=True)

        def undo():
            files.restore(host, path, saved)

        verb = "remove" if text is None else ("write" if current is None else "update")
        return self.add(change_key, current, text, action, description or "%s %s" % (verb, path),
                        header=path, undo=undo, disruption=disruption, shown=shown)

    def then(self, description, action, validates=False, disruption=ONLINE):
        """Run ``action`` after the changes, only when there are any.  A failing step that
        ``validates`` the changes (``netplan generate``) rolls them back."""
        self._steps.append(Step(description, action, validates, disruption))

    def refuse(self, key):
        """Called by a change's action: the host refused change ``key``, so it changed nothing.
        It is left out of ``applied``, ``changed``, ``changes`` and the diff."""
        self._refused.add(key)

    def _effective(self):
        return [change for change in self._changes if change.key not in self._refused]

    def __iter__(self):
        return iter(self._changes)

    def __len__(self):
        return len(self._changes)

    @property
    def changed(self):
        return bool(self._effective())

    def descriptions(self, first=0, end=None):
        """What changes (or would), in order; ``first``/``end`` pick the changes one part of an
        aggregate engine added (their indexes, as ``len(plan)`` gave them)."""
        return [change.description for change in self._changes[first:end] if change.key not in self._refused]

    def steps(self):
        return [step.description for step in self._steps] if self._changes else []

    def disruptive(self):
        """The changes and steps above ``online``, most disruptive first: ``[(class, description)]``."""
        found = [(change.disruption, change.description) for change in self._effective()]
        if self._changes:
            found.extend((step.disruption, step.description) for step in self._steps)
        found = [item for item in found if disruption_rank(item[0]) > disruption_rank(ONLINE)]
        return sorted(found, key=lambda item: -disruption_rank(item[0]))

    @property
    def disruption(self):
        """The highest class of what the plan changes (``none`` when it changes nothing)."""
        if not self.changed:
            return NONE
        classes = [change.disruption for change in self._effective()]
        classes.extend(step.disruption for step in self._steps)
        return highest_disruption(classes)

    def disruption_of(self, first=0, end=None):
        """The highest class of the changes one part of an aggregate engine added (their indexes,
        as ``len(plan)`` gave them); the shared steps are the aggregate's, not the part's."""
        return highest_disruption([change.disruption for change in self._changes[first:end]
                                   if change.key not in self._refused])

    def diff(self):
        """Ansible diff: one entry for structured values, one per text file."""
        entries = []
        before, after = {}, {}
        for change in self._effective():
            if change.header is not None:
                shown = change.shown or (lambda text: text)
                entries.append(
                    dict(
                        before=files.for_display(shown(change.before)) or "",
                        after=files.for_display(shown(change.after)) or "",
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

    def apply(self, check_mode=False):
        """Run every change, then every step, in order unless in check mode.

        Return the descriptions acted on; raise :class:`ApplyError` when one fails.
        """
        if check_mode or not self._changes:
            return []
        self.applied = []
        index = 0
        try:
            for index, change in enumerate(self._changes):
                change.action()
                if change.key not in self._refused:
                    self.applied.append(change)
        except (RdmaopsError, IOError, OSError) as exc:
            self._fail(exc, self._changes[index:], rollback=True)
        for step in self._steps:
            try:
                step.action()
            except (RdmaopsError, IOError, OSError) as exc:
                self._fail(exc, [], rollback=step.validates)
        return [change.description for change in self.applied]

    def _fail(self, exc, not_reached, rollback):
        rolled_back, failed = [], []
        if rollback:
            for change in reversed(list(self.applied)):
                if change.undo is None:
                    continue
                try:
                    change.undo()
                except (RdmaopsError, IOError, OSError) as undo_exc:
                    failed.append("%s (%s)" % (change.description, undo_exc))
                    continue
                self.applied.remove(change)
                rolled_back.append(change.description)
        self.rolled_back = rolled_back
        raise ApplyError(
            exc,
            applied=[change.description for change in self.applied],
            rolled_back=rolled_back,
            not_applied=[change.description for change in not_reached],
            rollback_failed=failed,
        )

    def result(self, check_mode, diff_mode):
        """The common part of a state-changing module's result."""
        result = dict(changed=self.changed, changes=self.descriptions(), disruption=self.disruption,
                      disruptive_changes=["%s: %s" % item for item in self.disruptive()])
        if diff_mode:
            result["diff"] = self.diff()
        return result
