"""A stand-in for the NVUE REST API of a Cumulus Linux 5.x switch, on 127.0.0.1.

It proves our client (the rdmaops.roce.nvue httpapi plugin and switch_roce) against NVUE's
documented workflow, not NVUE's semantics: HTTP basic authentication; ``POST /nvue_v1/revision``
(a pending revision); ``PATCH /nvue_v1/<path>?rev=<id>`` (set content, ``null`` unsets), each body
checked against NVIDIA's published object model of the release it plays (the ``nvueschema``
package) with unknown keys refused, as a typo must be; ``PATCH /nvue_v1/revision/<id>`` with
``state: apply`` and the ``auto-prompt`` answer, after which the revision goes ``apply`` ->
``applied`` over the next reads; ``PATCH /nvue_v1/revision/applied`` ``state: save``;
``GET /nvue_v1/<path>?rev=applied|startup|<id>`` and ``&diff=<rev>``; ``GET /nvue_v1/system``.

It can be told (:meth:`NvueStandin.behave`, or ``POST /_standin/behave`` with the same keys from a
playbook) to answer the next applies ``invalid`` (with NVUE's
``transition.issue`` shape), ``apply_fail`` (nothing took effect), ``apply_fail_partway`` (the first
half of the revision's changes took effect, then ``apply_fail``: what a real NVUE does when switchd
fails in the middle of programming a revision), or never finish, to fail the save, and to name
revisions the old way (``changeset/cumulus/...``, which clients must URL-encode).

Run alone: ``python tests/tools/nvue_standin/standin.py --version 5.12 --port 8765``.
"""

import argparse
import base64
import copy
import importlib
import itertools
import json
import threading
import typing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import BaseModel, ValidationError

ROOT = "/nvue_v1"


# --- the schema: nvueschema's models with unknown keys forbidden ---------------------------------

def models(version):
    """The root model (``NvueConfig``) of NVUE ``version`` ("5.12")."""
    return importlib.import_module("nvueschema.models.v" + version.replace(".", "_")).NvueConfig


def _field_model(annotation):
    """``("model", M)``, ``("map", M)`` (a dict of M by id), ``("any", None)`` or ``("leaf", None)``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "model", annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (dict, typing.Dict) and len(args) == 2:
        inner = _field_model(args[1])
        return ("map", inner[1]) if inner[0] == "model" else ("any", None)
    for arg in args:
        kind = _field_model(arg)
        if kind[0] != "leaf":
            return kind
    return "leaf", None


def unknown_keys(model, body, path=""):
    """Every key of ``body`` that ``model`` does not have (nvueschema's models drop them silently)."""
    problems = []
    if not isinstance(body, dict):
        return problems
    fields = dict(((field.alias or name), field) for name, field in model.model_fields.items())
    for key, value in body.items():
        where = "%s/%s" % (path, key)
        if key not in fields:
            problems.append("%s: unknown key %r (known here: %s)" % (where, key, ", ".join(sorted(fields))))
            continue
        if value is None:
            continue  # null unsets the key
        kind, sub = _field_model(fields[key].annotation)
        if kind == "model":
            problems += unknown_keys(sub, value, where)
        elif kind == "map" and isinstance(value, dict):
            for entry, item in value.items():
                if item is not None:
                    problems += unknown_keys(sub, item, "%s/%s" % (where, entry))
    return problems


def _without_nulls(body):
    if not isinstance(body, dict):
        return body
    return dict((key, _without_nulls(value)) for key, value in body.items() if value is not None)


def validate(version, body):
    """The problems NVUE ``version``'s object model finds in the root PATCH ``body`` (empty: valid).

    Unknown keys are refused; the set content is then validated by the model (types, ranges, enums)
    and must survive a dump unchanged (a guard against anything else the models drop).
    """
    model = models(version)
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    problems = unknown_keys(model, body)
    if problems:
        return problems
    content = _without_nulls(body)
    try:
        parsed = model.model_validate(content)
    except ValidationError as exc:
        return ["%s: %s" % ("/".join(str(part) for part in error["loc"]), error["msg"]) for error in exc.errors()]
    dumped = parsed.model_dump(by_alias=True, exclude_unset=True, mode="json")
    if dumped != content:
        return ["the model does not keep the body as sent: %s" % json.dumps(dumped, sort_keys=True)]
    return []


def merge(config, body):
    """``config`` after a PATCH of ``body``: dicts merge, ``null`` unsets."""
    result = copy.deepcopy(config) if isinstance(config, dict) else {}
    for key, value in body.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge(result.get(key) if isinstance(result.get(key), dict) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def leaf_changes(old, new, path=()):
    """``[(path, value)]``: the leaves that take ``old`` to ``new``, in order (``None``: unset)."""
    changes = []
    for key in list(old) + [key for key in new if key not in old]:
        here = path + (key,)
        if key not in new:
            changes.append((here, None))
        elif isinstance(old.get(key), dict) and isinstance(new[key], dict) and new[key]:
            changes += leaf_changes(old[key], new[key], here)
        elif old.get(key) != new[key]:
            changes.append((here, copy.deepcopy(new[key])))
    return changes


def set_leaf(config, path, value):
    """``config`` with one leaf change made (``None``: unset), in place."""
    for key in path[:-1]:
        if not isinstance(config.get(key), dict):
            config[key] = {}
        config = config[key]
    if value is None:
        config.pop(path[-1], None)
    else:
        config[path[-1]] = value


def at_path(tree, parts):
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def wrap(parts, body):
    for part in reversed(parts):
        body = {part: body}
    return body


def diff(old, new):
    """A PATCH-shaped difference: what ``new`` sets and (as null) what it unsets, relative to ``old``."""
    out = {}
    for key in set(old) | set(new):
        if key not in new:
            out[key] = None
        elif key not in old or not (isinstance(old[key], dict) and isinstance(new[key], dict)):
            if old.get(key) != new[key]:
                out[key] = new[key]
        else:
            inner = diff(old[key], new[key])
            if inner:
                out[key] = inner
    return out


# --- the state machine ---------------------------------------------------------------------------

class NvueStandin:
    """The switch: an applied and a startup configuration, revisions, and a log of every request."""

    def __init__(self, version="5.12", user="cumulus", password="CumulusLinux!", applied=None,
                 polls_to_apply=1, id_style="number"):
        self.version = version
        self.credentials = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.applied = copy.deepcopy(applied or {})
        self.startup = copy.deepcopy(self.applied)
        self.revisions = {}
        self.requests = []
        self.polls_to_apply = polls_to_apply
        self.id_style = id_style
        self.apply_mode = "ok"  # ok | invalid | apply_fail | apply_fail_partway | never
        self.save_mode = "ok"  # ok | fail
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self.server = None

    def behave(self, apply="ok", save="ok", id_style=None, applied=None):
        """How the next applies and saves answer (and how new revisions are named); ``applied``
        replaces the applied configuration (a switch someone else configured, or one answering a
        shape NVUE's model would not)."""
        with self.lock:
            self.apply_mode, self.save_mode = apply, save
            if id_style:
                self.id_style = id_style
            if applied is not None:
                self.applied = copy.deepcopy(applied)

    def created(self):
        """The ids of every revision created so far."""
        return list(self.revisions)

    # --- HTTP -------------------------------------------------------------------------------

    def start(self, port=0):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status, data):
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path == "/_standin/behave" and method == "POST":
                    # The test's control: how the next applies and saves answer (no NVUE counterpart).
                    standin.behave(**json.loads(raw or b"{}"))
                    return self._reply(200, {"apply": standin.apply_mode, "save": standin.save_mode})
                if self.headers.get("Authorization") != standin.credentials:
                    return self._reply(401, {"status": 401, "title": "Unauthorized",
                                             "detail": "The server could not verify that you are authorized"})
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    return self._reply(400, {"status": 400, "title": "Bad Request", "detail": "body is not JSON"})
                split = urlsplit(self.path)
                query = dict((key, values[-1]) for key, values in parse_qs(split.query).items())
                if not split.path.startswith(ROOT):
                    return self._reply(404, {"status": 404, "title": "Not Found", "detail": split.path})
                # Split before decoding: a revision id may hold an encoded "/".
                parts = [unquote(part) for part in split.path[len(ROOT):].split("/") if part]
                with standin.lock:
                    standin.requests.append((method, split.path, query, body))
                    status, data = standin.handle(method, parts, query, body)
                return self._reply(status, data)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        thread = threading.Thread(target=self.server.serve_forever, kwargs=dict(poll_interval=0.1), daemon=True)
        thread.start()
        return self.server.server_address[1]

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    # --- the API ----------------------------------------------------------------------------

    @staticmethod
    def _problem(status, title, detail):
        return status, {"status": status, "title": title, "detail": detail, "type": "about:blank"}

    def handle(self, method, parts, query, body):
        if parts[:1] == ["revision"]:
            return self._revision(method, parts[1:], body)
        if parts == ["system"] and method == "GET":
            return 200, {"hostname": "leaf01", "build": "Cumulus Linux %s.0" % self.version,
                         "product-release": "%s.0" % self.version, "product-name": "Cumulus Linux"}
        if method == "GET":
            return self._get(parts, query)
        if method == "PATCH":
            return self._patch(parts, query, body)
        return self._problem(405, "Method Not Allowed", "%s /%s" % (method, "/".join(parts)))

    def _config(self, rev):
        if rev in (None, "operational", "applied"):
            return self.applied
        if rev == "startup":
            return self.startup
        if rev in self.revisions:
            return self.revisions[rev]["config"]
        return None

    def _get(self, parts, query):
        config = self._config(query.get("rev"))
        if config is None:
            return self._problem(404, "Not Found", "revision %s does not exist" % query.get("rev"))
        if "diff" in query:
            other = self._config(query["diff"])
            if other is None:
                return self._problem(404, "Not Found", "revision %s does not exist" % query["diff"])
            return 200, at_path(diff(config, other), parts) or {}
        value = at_path(config, parts)
        if value is None:
            return self._problem(404, "Not Found", "/" + "/".join(parts))
        return 200, value

    def _patch(self, parts, query, body):
        rev = query.get("rev")
        revision = self.revisions.get(rev)
        if revision is None:
            return self._problem(400, "Bad Request", "a configuration PATCH needs ?rev=<a pending revision>")
        if revision["state"] != "pending":
            return self._problem(400, "Bad Request", "revision %s is %s, not pending" % (rev, revision["state"]))
        if not isinstance(body, dict):
            return self._problem(400, "Bad Request", "the body must be a JSON object")
        root_body = wrap(parts, body)
        problems = validate(self.version, root_body)
        if problems:
            return self._problem(400, "Bad Request", "; ".join(problems))
        revision["config"] = merge(revision["config"], root_body)
        revision["patches"].append(root_body)
        # NVUE 5.10 and later answer with the change, older releases with the whole tree
        if tuple(int(part) for part in self.version.split(".")) >= (5, 10):
            return 200, body
        return 200, at_path(revision["config"], parts) or {}

    def _new_id(self):
        number = next(self._ids)
        if self.id_style == "changeset":
            return "changeset/cumulus/2021-11-02_13.57.%02d_5Z1H" % number
        return str(number)

    def _revision(self, method, parts, body):
        if method == "POST" and not parts:
            rev = self._new_id()
            self.revisions[rev] = {"state": "pending", "config": copy.deepcopy(self.applied), "patches": [],
                                   "base": copy.deepcopy(self.applied), "polls": 0, "mode": None,
                                   "transition": {"issue": {}, "progress": ""}}
            return 200, {rev: self._public(rev)}
        if len(parts) != 1:
            return self._problem(404, "Not Found", "/revision/" + "/".join(parts))
        rev = parts[0]
        if method == "PATCH" and rev == "applied":
            if not isinstance(body, dict) or body.get("state") != "save":
                return self._problem(400, "Bad Request", "PATCH /revision/applied takes state: save")
            if self.save_mode == "fail":
                return self._problem(500, "Internal Server Error", "could not write /etc/nvue.d/startup.yaml")
            self.startup = copy.deepcopy(self.applied)
            return 200, {"state": "saved"}
        revision = self.revisions.get(rev)
        if revision is None:
            return self._problem(404, "Not Found", "revision %s does not exist" % rev)
        if method == "GET":
            self._advance(rev)
            return 200, self._public(rev)
        if method == "PATCH":
            if not isinstance(body, dict) or body.get("state") != "apply":
                return self._problem(400, "Bad Request", "a revision PATCH takes state: apply")
            if revision["state"] != "pending":
                return self._problem(400, "Bad Request", "revision %s is %s, not pending" % (rev, revision["state"]))
            revision["state"] = "apply"
            revision["mode"] = self.apply_mode
            revision["ays"] = (body.get("auto-prompt") or {}).get("ays")
            return 200, self._public(rev)
        return self._problem(405, "Method Not Allowed", method)

    def _public(self, rev):
        revision = self.revisions[rev]
        return {"state": revision["state"], "transition": copy.deepcopy(revision["transition"])}

    def _advance(self, rev):
        """An applying revision finishes after ``polls_to_apply`` reads (never, when told so)."""
        revision = self.revisions[rev]
        if revision["state"] != "apply" or revision["mode"] == "never":
            return
        revision["polls"] += 1
        if revision["polls"] < self.polls_to_apply:
            return
        mode = revision["mode"]
        if revision.get("ays") != "ays_yes":
            revision["state"] = "ays_fail"
            revision["transition"]["progress"] = "Aborted apply after warnings"
        elif mode == "invalid":
            revision["state"] = "invalid"
            revision["transition"]["issue"] = {"0": {
                "code": "config_invalid", "severity": "error",
                "message": "Only one traffic class can be mapped to the RoCE lossless pool",
                "data": {"location": "qos.egress-queue-mapping.default-global"}}}
        elif mode == "apply_fail":
            revision["state"] = "apply_fail"
            revision["transition"]["progress"] = "switchd: failed to program the QoS configuration; rolled back"
        elif mode == "apply_fail_partway":
            # Part of the revision took effect before switchd failed, and NVUE did not roll it back.
            target = self.applied
            for patch in revision["patches"]:
                target = merge(target, patch)
            changes = leaf_changes(self.applied, target)
            done = copy.deepcopy(self.applied)
            for path, value in changes[:(len(changes) + 1) // 2]:
                set_leaf(done, path, value)
            self.applied = done
            revision["state"] = "apply_fail"
            revision["transition"]["progress"] = ("switchd: failed to program the QoS configuration after %d of %d "
                                                  "changes" % ((len(changes) + 1) // 2, len(changes)))
        else:
            # Applied on top of what is applied now (another revision may have been applied since).
            config = self.applied
            for patch in revision["patches"]:
                config = merge(config, patch)
            self.applied = config
            revision["state"] = "applied"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--version", default="5.12")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--user", default="cumulus")
    parser.add_argument("--password", default="CumulusLinux!")
    args = parser.parse_args()
    standin = NvueStandin(args.version, args.user, args.password)
    port = standin.start(args.port)
    print("NVUE %s stand-in on http://127.0.0.1:%d%s (Ctrl-C stops it)" % (args.version, port, ROOT), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        standin.stop()


if __name__ == "__main__":
    main()
