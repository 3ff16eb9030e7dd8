# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine protocol and the one runner every state-changing module uses.

An engine is a class with four steps, called in this order by :func:`run_module`:

``validate()``  refuse bad parameters (:class:`InputError`) before anything is read or touched;
``read()``      the current state, from files and tools;
``plan(plan)``  add one change per difference (``changed`` comes from the plan, never from
                a command having run); check mode stops after this step;
``verify()``    after applying, re-read and return the problems (empty when all took);
``result()``    the module's own result keys (before/after, ...), in every mode, also on failure.

The runner owns everything around them: check and diff mode, the plan's truthful failure
handling (rollback or ``changed: true`` with what was and was not applied), warnings, the one
error family turned into ``fail_json``, the commands that ran, and the redaction of secrets.
A module's ``main()`` is documentation, an argument spec and ``run_module(module, Engine)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError, VerifyError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError, Plan, disruption_rank
from ansible_collections.rdmaops.roce.plugins.module_utils._core.redact import redact
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner


class Context:
    """What an engine gets from the runner: the host, the command runner, the modes, and the
    places to put warnings and secrets."""

    def __init__(self, module, host=None, runner=None):
        self.module = module
        self.host = host or HostRoot()
        self.runner = runner or CommandRunner(module)
        self.check_mode = bool(getattr(module, "check_mode", False))
        self.diff_mode = bool(getattr(module, "_diff", False))
        self.warnings = []
        self.secrets = []

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)

    def secret(self, value):
        """Mask ``value`` wherever it would appear in the result."""
        if value and value not in self.secrets:
            self.secrets.append(value)
            # Ansible masks these in everything it returns, the echoed invocation included.
            no_log_values = getattr(self.module, "no_log_values", None)
            if isinstance(no_log_values, set):
                no_log_values.add(value)
        return value


class Engine:
    """Base of every state-changing engine: override the steps that apply."""

    # Key under which the commands that ran are reported (None: not reported).
    commands_key = "commands"

    def __init__(self, ctx, params):
        self.ctx = ctx
        self.params = params
        self.host = ctx.host
        self.runner = ctx.runner

    @property
    def check_mode(self):
        return self.ctx.check_mode

    def validate(self):
        """Raise InputError for bad parameters; nothing may be touched here."""

    def read(self):
        """Read the current state."""

    def plan(self, plan):
        raise NotImplementedError

    def verify(self):
        """Re-read after applying: a list of problems, empty when everything took."""
        return []

    def held_back(self, plan):
        """Whether ``plan`` goes beyond the ``max_disruption`` this run allows, so nothing of it is
        applied (see :func:`execute`)."""
        limit = self.params.get("max_disruption") if isinstance(self.params, dict) else None
        return bool(limit) and disruption_rank(plan.disruption) > disruption_rank(limit)

    def will_apply(self, plan):
        """Whether :func:`execute` applies ``plan``: not in check mode, not empty, not held back."""
        return not self.check_mode and plan.changed and not self.held_back(plan)

    def result(self):
        """The engine's own result keys."""
        return {}


def execute(engine, plan=None):
    """Run ``engine`` through validate -> read -> plan -> apply -> verify.

    Return ``(result, plan)``; raise RdmaopsError with the plan's truth in its details.
    Exposed for aggregate engines and tests; modules use :func:`run_module`.
    """
    ctx = engine.ctx
    plan = plan if plan is not None else Plan()
    engine.validate()
    engine.read()
    engine.plan(plan)
    if engine.held_back(plan):
        # All or nothing: a host whose changes go beyond what the caller allows now (a rollout that
        # drains disruptive hosts first) is left exactly as it is, and told what is pending.
        result = plan.result(ctx.check_mode, ctx.diff_mode)
        result.update(changed=False, changes=[], held_back=True, pending=plan.descriptions())
        result.update(engine.result())
        if engine.commands_key and engine.commands_key not in result:
            result[engine.commands_key] = list(ctx.runner.commands)
        return result, plan
    if not ctx.check_mode and plan.changed:
        plan.apply()
        problems = engine.verify()
        if problems:
            raise VerifyError("after applying, the host does not report what was asked: %s" % "; ".join(problems),
                              problems=problems)
    result = plan.result(ctx.check_mode, ctx.diff_mode)
    steps = plan.steps()
    if steps:
        result["steps"] = steps
    result.update(engine.result())
    if engine.commands_key and engine.commands_key not in result:
        result[engine.commands_key] = list(ctx.runner.commands)
    return result, plan


def failure(exc, engine, plan):
    """The failed result for ``exc``: its details, and whether the host was left changed."""
    ctx = engine.ctx if engine is not None else None
    fail = dict(exc.details)
    if isinstance(exc, ApplyError):
        # A change that failed yet left the host changed (a switch whose rollback failed, that
        # applied part of a revision, or that applied but could not save) says so with
        # left_changed or its own changed: a failed change never hides what it left behind.
        fail["changed"] = (bool(exc.applied) or bool(exc.details.get("left_changed"))
                           or exc.details.get("changed") is True)
    elif isinstance(exc, VerifyError):
        fail["changed"] = bool(plan is not None and plan.applied)
        fail.setdefault("applied", [c.description for c in plan.applied] if plan is not None else [])
    else:
        fail["changed"] = False
    if engine is not None:
        try:
            for key, value in engine.result().items():
                fail.setdefault(key, value)
        except Exception:  # the engine's state may be incomplete after a failure: report what we have
            pass
        if engine.commands_key:
            fail.setdefault(engine.commands_key, list(ctx.runner.commands))
    fail["msg"] = exc.msg
    return fail


def run_module(module, engine_class, ctx=None):
    """Run ``engine_class`` for ``module`` and exit with its result (or its failure)."""
    ctx = ctx or Context(module)
    engine = None
    plan = None
    try:
        engine = engine_class(ctx, module.params)
        plan = Plan()
        result, plan = execute(engine, plan)
    except RdmaopsError as exc:
        _warn(module, ctx)
        module.fail_json(**redact(failure(exc, engine, plan), ctx.secrets))
    _warn(module, ctx)
    module.exit_json(**redact(result, ctx.secrets))


def run_facts(module, gather, ctx=None):
    """Run a read-only gatherer ``gather(ctx, params) -> result`` with the same error handling."""
    ctx = ctx or Context(module)
    try:
        result = gather(ctx, module.params)
    except RdmaopsError as exc:
        _warn(module, ctx)
        fail = dict(exc.details)
        fail.update(msg=exc.msg, changed=False)
        module.fail_json(**redact(fail, ctx.secrets))
    _warn(module, ctx)
    result.setdefault("changed", False)
    module.exit_json(**redact(result, ctx.secrets))


def read_only(module, argument_spec, run, params, check_mode=None, host=None, runner=None):
    """Another module's read inside this module's call: ``params`` checked against that module's own
    ``argument_spec`` (defaults filled in), then ``run(ctx, validated) -> result`` on a context of its
    own (``host`` and ``runner`` as given, else the module's) whose warnings go to ``module``.
    ``check_mode`` True forces check mode (an engine reads and plans, never applies), None keeps
    ``module``'s. Returns the result with ``failed: false`` and the validated ``params``, or, where the
    module would fail (bad options, a read it cannot make), ``failed: true`` and ``msg`` with what it
    had read: the caller reports it, it does not fail."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    if not isinstance(params, dict):
        return dict(failed=True, changed=False, msg="the read's options must be a mapping")
    checked = ArgumentSpecValidator(argument_spec).validate(params)
    if checked.error_messages:
        return dict(failed=True, changed=False, msg="; ".join(checked.error_messages))
    ctx = Context(module, host=host, runner=runner)
    if check_mode is not None:
        ctx.check_mode = bool(check_mode)
    validated = checked.validated_parameters
    try:
        result = run(ctx, validated)
        result.setdefault("failed", False)
    except RdmaopsError as exc:
        result = dict(exc.details)
        result.update(failed=True, changed=bool(exc.details.get("changed")), msg=exc.msg)
    result.setdefault("changed", False)
    result["params"] = validated
    _warn(module, ctx)
    return redact(result, ctx.secrets)


def engine_read(engine_class):
    """``run`` for :func:`read_only`: ``engine_class`` through :func:`execute` (in the context's mode),
    with :func:`failure`'s truthful result when it stops."""
    def run(ctx, params):
        engine = plan = None
        try:
            engine = engine_class(ctx, params)
            plan = Plan()
            return execute(engine, plan)[0]
        except RdmaopsError as exc:
            return dict(failure(exc, engine, plan), failed=True)
    return run


def _warn(module, ctx):
    for warning in ctx.warnings:
        module.warn(redact(warning, ctx.secrets))
