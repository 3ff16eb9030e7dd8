"""The rdmaops.roce.nvue httpapi plugin against the NVUE API stand-in over HTTP on 127.0.0.1.

The plugin runs as it does under ansible.netcommon.httpapi; only the connection's ``send`` is
replaced by the same urllib request the netcommon connection makes (basic auth, HTTP errors handed
to the plugin's ``handle_httperror``). ansible-playbook runs of the whole path are in
tests/unit/plugins/modules/test_switch_roce_nvue.py.
"""

import io

import pytest

import nvuesite
from ansible.module_utils.connection import ConnectionError as AnsibleConnectionError
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url
from ansible_collections.rdmaops.roce.plugins.httpapi.nvue import HttpApi

BODY = {"qos": {"roce": {"enable": "on", "mode": "lossless"}}, "interface": {"swp1": {"link": {"mtu": 9216}}}}


class Connection:
    """What the plugin uses of ansible.netcommon's httpapi connection, with its send() semantics."""

    def __init__(self, port, password=nvuesite.PASSWORD):
        self.base = "http://127.0.0.1:%d" % port
        self.password = password
        self.plugin = None

    def get_option(self, name):
        return {"persistent_command_timeout": 30}[name]

    def send(self, path, data, method="GET", headers=None):
        try:
            response = open_url(self.base + path, data=data, method=method, headers=headers, force_basic_auth=True,
                                url_username=nvuesite.USER, url_password=self.password, timeout=10)
        except HTTPError as exc:
            handled = self.plugin.handle_httperror(exc)
            if handled is False:
                raise
            response = handled
        return response, io.BytesIO(response.read())


class Api(HttpApi):
    OPTIONS = dict(root_path="/nvue_v1", apply_timeout=2, poll_interval=0.05, save=True)

    def get_option(self, option, hostvars=None):
        return self.OPTIONS[option]


@pytest.fixture
def switch():
    with nvuesite.standin("5.12", polls_to_apply=3) as standin:
        yield standin


def api_for(standin, **kwargs):
    connection = Connection(standin.server.server_address[1], **kwargs)
    api = Api(connection)
    connection.plugin = api
    return api


def test_commit_creates_patches_applies_polls_and_saves(switch):
    api = api_for(switch)
    assert api.nvue_release() == "5.12.0"
    outcome = api.commit([BODY])
    assert outcome == {"revision": "1", "state": "applied", "message": "", "saved": True}
    assert api.get_config("applied") == BODY == switch.startup
    methods = [(method, path) for method, path, query, body in switch.requests]
    assert methods[1:] == [("POST", "/nvue_v1/revision"), ("PATCH", "/nvue_v1/"), ("PATCH", "/nvue_v1/revision/1"),
                           ("GET", "/nvue_v1/revision/1"), ("GET", "/nvue_v1/revision/1"),
                           ("GET", "/nvue_v1/revision/1"), ("PATCH", "/nvue_v1/revision/applied"),
                           ("GET", "/nvue_v1/")]
    apply_body = switch.requests[3][3]
    assert apply_body == {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
    assert switch.requests[2][2] == {"rev": "1"} and switch.requests[-1][2] == {"rev": "applied", "filled": "false"}


def test_nothing_to_commit_makes_no_revision(switch):
    assert api_for(switch).commit([])["state"] == "applied"
    assert nvuesite.revisions_created(switch) == []


def test_old_style_revision_ids_are_url_encoded(switch):
    switch.behave(id_style="changeset")
    api = api_for(switch)
    outcome = api.commit([BODY])
    assert outcome["state"] == "applied" and outcome["revision"].startswith("changeset/cumulus/")
    paths = [path for method, path, query, body in switch.requests if "/revision/" in path]
    assert "/nvue_v1/revision/changeset%2Fcumulus%2F2021-11-02_13.57.01_5Z1H" in paths


def test_an_invalid_revision_reports_nvues_issue_and_applies_nothing(switch):
    switch.behave(apply="invalid")
    outcome = api_for(switch).commit([BODY])
    assert outcome["state"] == "invalid" and not outcome["saved"]
    assert outcome["message"] == ("Only one traffic class can be mapped to the RoCE lossless pool "
                                  "(at qos.egress-queue-mapping.default-global)")
    assert switch.applied == {}


def test_a_failed_apply_reports_nvues_reason(switch):
    switch.behave(apply="apply_fail")
    outcome = api_for(switch).commit([BODY])
    assert outcome["state"] == "apply_fail"
    assert outcome["message"] == "switchd: failed to program the QoS configuration; rolled back"


def test_a_revision_that_never_finishes_stops_polling_at_the_timeout(switch):
    switch.behave(apply="never")
    outcome = api_for(switch).commit([BODY])
    assert outcome["state"] == "timeout" and outcome["last_state"] == "apply"
    polls = [path for method, path, query, body in switch.requests if method == "GET" and "/revision/" in path]
    assert 5 <= len(polls) <= 2 / 0.05 + 1


def test_a_refused_patch_is_told_apart_with_nvues_text(switch):
    outcome = api_for(switch).commit([{"qos": {"roce": {"mod": "lossless"}}}])
    assert outcome["state"] == "rejected"
    assert "HTTP 400: Bad Request: /qos/roce/mod: unknown key 'mod'" in outcome["message"]
    assert [path for method, path, query, body in switch.requests if "/revision/" in path] == []


def test_a_failed_save_leaves_the_change_applied_and_says_so(switch):
    switch.behave(save="fail")
    outcome = api_for(switch).commit([BODY])
    assert outcome["state"] == "applied" and outcome["saved"] is False
    assert "HTTP 500" in outcome["message"] and "startup.yaml" in outcome["message"]
    assert switch.applied == BODY and switch.startup == {}


def test_wrong_credentials_say_so(switch):
    with pytest.raises(AnsibleConnectionError) as err:
        api_for(switch, password="wrong").nvue_release()
    assert "HTTP 401" in str(err.value) and "ansible_password" in str(err.value)


def test_unknown_revision_gives_nvues_not_found(switch):
    with pytest.raises(AnsibleConnectionError) as err:
        api_for(switch).get_revision("42")
    assert "HTTP 404: Not Found: revision 42 does not exist" in str(err.value)
