# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: nvue
author:
  - rdmaops developers (@rdmaops)
short_description: The NVUE REST API of NVIDIA Cumulus Linux 5.x, with NVUE's revision workflow
version_added: 1.0.0
description:
  - An httpapi plugin for C(ansible.netcommon.httpapi) (C(ansible_network_os=rdmaops.roce.nvue)); the
    C(rdmaops.roce.switch_roce) module uses it to read the applied revision and to change the switch.
  - >-
    A change is one revision - create it (C(POST /nvue_v1/revision)), PATCH the bodies into it, apply it
    answering NVUE's "are you sure" prompt (C(state=apply) with C(auto-prompt.ays=ays_yes)), poll
    its state until NVUE reports it applied, invalid or failed (never longer than O(apply_timeout)), then save
    the applied configuration to the startup configuration.
  - Revision ids are URL-encoded (older releases name them like C(changeset/cumulus/2021-11-02_13.57.25_5Z1H)).
    NVUE's own error text is returned - the issues of an invalid revision, the reason of a failed apply, the
    detail of a refused PATCH - each told apart.
  - The NVUE API listens on HTTPS port 8765 (enabled by default from Cumulus Linux 5.6); set
    C(ansible_httpapi_port=8765), C(ansible_httpapi_use_ssl=true) and the switch user's C(ansible_user) and
    C(ansible_password) (HTTP basic authentication).
options:
  root_path:
    description: The base path of the NVUE API.
    type: str
    default: /nvue_v1
    vars:
      - name: ansible_nvue_root_path
  apply_timeout:
    description:
      - The longest time in seconds to wait for NVUE to finish applying a revision. It is also kept below
        C(ansible_command_timeout) (the persistent connection's limit for one call), which must then be raised
        for a longer wait.
    type: int
    default: 120
    vars:
      - name: ansible_nvue_apply_timeout
  poll_interval:
    description: Seconds between two reads of a revision's state while it applies.
    type: float
    default: 1.0
    vars:
      - name: ansible_nvue_poll_interval
  save:
    description: Save the applied configuration to the startup configuration (C(nv config save)) after each change.
    type: bool
    default: true
    vars:
      - name: ansible_nvue_save
"""

import json
import time

from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.connection import ConnectionError
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.six.moves.urllib.parse import quote, urlencode

from ansible_collections.ansible.netcommon.plugins.plugin_utils.httpapi_base import HttpApiBase

APPLY = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
SAVE = {"state": "save", "auto-prompt": {"ays": "ays_yes"}}
# Revision states that end an apply; anything else (apply, applying, ...) is still under way.
APPLIED = "applied"
FAILED_STATES = ("invalid", "apply_fail", "ays_fail", "ayn_fail", "ignore_fail", "apply_error")
JSON = "application/json"


def nvue_error_text(body, fallback):
    """NVUE's own words from an error response (problem+json: title and detail)."""
    try:
        data = json.loads(to_text(body)) if body else None
    except ValueError:
        data = None
    if isinstance(data, dict):
        parts = [to_text(data[key]) for key in ("title", "detail", "message") if data.get(key)]
        if parts:
            return ": ".join(parts)
    text = to_text(body or "").strip()
    return text or fallback


def issue_text(revision):
    """The issues NVUE lists in a revision's ``transition`` (a dict by id or a list), as one line."""
    transition = revision.get("transition") if isinstance(revision, dict) else None
    issues = transition.get("issue") if isinstance(transition, dict) else None
    if isinstance(issues, dict):
        issues = list(issues.values())
    texts = []
    for issue in issues or []:
        if not isinstance(issue, dict):
            texts.append(to_text(issue))
            continue
        text = to_text(issue.get("message") or issue.get("code") or issue)
        location = issue.get("data", {}).get("location") if isinstance(issue.get("data"), dict) else None
        if location:
            text += " (at %s)" % location
        texts.append(text)
    if not texts and isinstance(transition, dict) and transition.get("progress"):
        texts.append(to_text(transition["progress"]))
    return "; ".join(texts)


class HttpApi(HttpApiBase):
    """Requests to NVUE and its revision workflow; every public method is callable from a module
    through ``Connection(module._socket_path)``."""

    def update_auth(self, response, response_text):
        # NVUE takes HTTP basic authentication on every request; no session token to keep.
        return None

    def handle_httperror(self, exc):
        # Hand every HTTP error back to send_request, which reads NVUE's text from the body.
        if exc.code == 401:
            return False
        return exc

    def send_request(self, data, **message_kwargs):
        """``(status, parsed JSON or text)`` for one request; raises ConnectionError with NVUE's text on
        an HTTP error."""
        path = message_kwargs.get("path", "/")
        query = message_kwargs.get("query")
        url = self.get_option("root_path").rstrip("/") + path
        if query:
            url += "?" + urlencode(query)
        payload = json.dumps(data) if data is not None else None
        headers = {"Content-Type": JSON, "Accept": JSON}
        try:
            response, buffer = self.connection.send(url, payload, method=message_kwargs.get("method", "GET"),
                                                    headers=headers)
        except HTTPError as exc:
            body = exc.read() if hasattr(exc, "read") else b""
            if exc.code == 401:
                raise ConnectionError("NVUE refused the user and password (HTTP 401): check ansible_user and "
                                      "ansible_password", code=401)
            raise ConnectionError("%s %s: HTTP %d: %s" % (message_kwargs.get("method", "GET"), url, exc.code,
                                                          nvue_error_text(body, exc.reason)), code=exc.code)
        status = getattr(response, "status", None) or getattr(response, "code", None)
        text = buffer.read()
        if isinstance(response, HTTPError):
            raise ConnectionError("%s %s: HTTP %d: %s" % (message_kwargs.get("method", "GET"), url, response.code,
                                                          nvue_error_text(text, response.reason)), code=response.code)
        try:
            return status, json.loads(to_text(text)) if text else {}
        except ValueError:
            return status, to_text(text)

    def _json(self, method, path, data=None, query=None):
        return self.send_request(data, method=method, path=path, query=query)[1]

    # --- reads ------------------------------------------------------------------------------

    def nvue_release(self):
        """The Cumulus Linux release the switch runs (``5.12.0``), from ``GET /system``."""
        system = self._json("GET", "/system")
        if isinstance(system, dict):
            for key in ("product-release", "build", "version"):
                value = system.get(key)
                if isinstance(value, dict):
                    value = value.get("image") or value.get("build")
                if value:
                    text = to_text(value)
                    return text.split()[-1] if " " in text else text
        raise ConnectionError("GET %s/system did not say which release the switch runs: %s"
                              % (self.get_option("root_path"), system))

    def get_config(self, rev="applied", path="/", filled=False):
        """A configuration tree: ``GET <path>?rev=<rev>&filled=false`` (only what is configured, not defaults)."""
        query = {"rev": rev}
        if filled is not None:
            query["filled"] = "true" if filled else "false"
        return self._json("GET", path, query=query)

    def get_revision(self, revision):
        """A revision's state and transition (``GET /revision/<id>``, the id URL-encoded)."""
        data = self._json("GET", "/revision/" + quote(revision, safe=""))
        if isinstance(data, dict) and "state" not in data and len(data) == 1:
            data = list(data.values())[0]
        return data if isinstance(data, dict) else {}

    # --- the revision workflow --------------------------------------------------------------

    def create_revision(self):
        """A new pending revision; its id."""
        data = self._json("POST", "/revision")
        if isinstance(data, dict) and len(data) == 1:
            return to_text(list(data)[0])
        raise ConnectionError("POST %s/revision returned no revision id: %s" % (self.get_option("root_path"), data))

    def patch(self, revision, body, path="/"):
        """PATCH ``body`` (set content, or ``null`` to unset) at ``path`` into ``revision``."""
        return self._json("PATCH", path, data=body, query={"rev": revision})

    def apply_revision(self, revision):
        """Apply ``revision`` answering the prompt, then poll it: the final revision, with ``state``
        ``applied``, one of NVUE's failure states, or ``timeout`` (with ``last_state``)."""
        self._json("PATCH", "/revision/" + quote(revision, safe=""), data=APPLY)
        deadline = time.time() + self._wait_limit()
        interval = max(0.05, float(self.get_option("poll_interval")))
        while True:
            current = self.get_revision(revision)
            state = current.get("state")
            if state == APPLIED or state in FAILED_STATES:
                return current
            if time.time() + interval > deadline:
                timed_out = dict(current)
                timed_out.update(state="timeout", last_state=state)
                return timed_out
            time.sleep(interval)

    def save(self):
        """``nv config save``: the applied revision becomes the startup configuration."""
        return self._json("PATCH", "/revision/applied", data=SAVE)

    def commit(self, bodies):
        """The whole workflow for a list of PATCH bodies; never raises for NVUE's answers.

        Returns ``{revision, state, message, saved}``: ``state`` is ``applied``, ``rejected`` (a PATCH
        was refused: nothing applied), ``invalid`` (NVUE's validation failed: nothing applied), a failed
        apply state such as ``apply_fail``, or ``timeout``.
        """
        if not bodies:
            return {"revision": None, "state": APPLIED, "message": "", "saved": True}
        revision = self.create_revision()
        outcome = {"revision": revision, "saved": False}
        for body in bodies:
            try:
                self.patch(revision, body)
            except ConnectionError as exc:
                outcome.update(state="rejected", message=to_text(exc))
                return outcome
        final = self.apply_revision(revision)
        state = final.get("state")
        outcome.update(state=state, message=issue_text(final))
        if state == "timeout":
            outcome["last_state"] = final.get("last_state")
        if state == APPLIED and self.get_option("save"):
            try:
                self.save()
            except ConnectionError as exc:
                outcome["message"] = to_text(exc)
                return outcome
        outcome["saved"] = state == APPLIED
        return outcome

    def _wait_limit(self):
        limit = float(self.get_option("apply_timeout"))
        try:
            # One call through the persistent connection may not outlast its command timeout.
            command_timeout = float(self.connection.get_option("persistent_command_timeout"))
        except (KeyError, TypeError, ValueError):
            return limit
        return max(1.0, min(limit, command_timeout - 5))
