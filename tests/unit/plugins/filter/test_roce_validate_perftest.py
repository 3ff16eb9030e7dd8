"""The perftest filters (roce_validate_rail_pings.py): roce_validate_perftest_servers and roce_validate_perftest_clients,
against what the validate role's five looping perftest tasks ran before them.

tests/unit/fixtures/validate_probes/perftest.json holds, for each host of the batch of 96 random multi-rail fabrics, the
items and argv of 'Start the perftest servers', 'Run ib_write_bw and ib_write_lat against each server', 'Start the
per-rail ib_write_bw servers', 'Run ib_write_bw per rail against each server, on the rail's device' and 'Start the
perftest servers on the partners outside the batch' (with the partner each run was delegated to), rendered by
Ansible's Templar from the role at 711dee0 (see its README.md). The filters must give the same commands, items and
order (servers: the first ports' then the rails'; clients: the same; a partner's, with client=, those the old task
started on it, in its order), except for what the functions below change, each a difference stated and counted here:

* two deliberate ones: rail_servers_for_clients_that_run (a rail server starts only for a client with an active
  RoCE port on the rail) and rail_port_of_the_servers_link (both ends take the rail's TCP port from the server's
  link position);
* one found by this comparison, not intended: gid_index_null_as_written (a port whose RoCE v2 GID
  index is null)."""

import json
import os
import re
from collections import Counter

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.validation import check_type_str
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 (the core216 tier) renders any template
    def trust_as_template(value):
        return value

from ansible_collections.rdmaops.roce.plugins.filter.roce_validate_rail_pings import (
    roce_validate_perftest_clients, roce_validate_perftest_servers)
from test_roce_validate_rail_pings import CountingHostvars, link, port

HERE = os.path.dirname(__file__)
FIXTURE = os.path.join(HERE, "..", "..", "fixtures", "validate_probes", "perftest.json")
ROLE_VARS = os.path.join(HERE, "..", "..", "..", "..", "roles", "validate", "vars", "main.yml")
ROLE_TASKS = os.path.join(HERE, "..", "..", "..", "..", "roles", "validate", "tasks", "main.yml")
PARTNER_TASK = "Start the perftest servers on the partners outside the batch"

with open(FIXTURE) as _handle:
    CAPTURED = json.load(_handle)
SETTINGS = CAPTURED["settings"]


def role_settings():
    """validate_perftest_settings as the role passes it to the filters, rendered from roles/validate/vars/main.yml
    with the settings the old tasks ran with: whole numbers on every ansible-core (2.16 renders a template of its
    own to text, and the filters refuse text)."""
    with open(ROLE_VARS) as handle:
        written = yaml.safe_load(handle)["validate_perftest_settings"]
    templar = Templar(loader=DataLoader(), variables=dict(SETTINGS, validate_intent={"roce_tos": SETTINGS["roce_tos"]}))
    if isinstance(written, dict):  # a template per setting
        return dict((key, templar.template(trust_as_template(value))) for key, value in written.items())
    return templar.template(trust_as_template(written))


PERFTEST = role_settings()
# the old servers ran under validate_server_loop (attempts runs, until one succeeds): the probe's retries
ATTEMPTS = int(CAPTURED["server_loop"][-1])
SERVER_AGAIN = {"retries": ATTEMPTS - 1, "attempts": ATTEMPTS, "delay": 0}
# the old clients' retries and delay, their until's attempts (validate_rdma_attempts) for a run that hung
CLIENT_AGAIN = {"retries": CAPTURED["client_retries"], "attempts": SETTINGS["validate_rdma_attempts"], "delay": CAPTURED["client_delay"]}


def rail_links(case, host):
    return case["hosts"][host].get("validate_rail_links") or []


def behind_active_port(case, host, rail_link):
    return any(own["netdev"] == rail_link["interface"] for own in case["hosts"][host].get("validate_ports") or [])


def rail_of(case, run, host):
    """The rail of a rail run's item ``[pair index, link position]`` (the position among ``host``'s links)."""
    return rail_links(case, host)[run["item"][1]]["rail"]


def rail_servers_for_clients_that_run(case, host, runs):
    """Deliberate difference (a): a rail server starts only when its client has a link of the rail with an ACTIVE
    RoCE port behind it (the old task: when it had a link of the rail at all). Without one the client runs no test
    on that rail, and the old server waited for it until its timeout, attempts times."""
    kept = []
    for run in runs:
        client, rail = case["pairs"][run["item"][0]][0], rail_of(case, run, host)
        if any(own["rail"] == rail and behind_active_port(case, client, own) for own in rail_links(case, client)):
            kept.append(run)
    return kept


def rail_port_of_the_servers_link(case, host, argv, run):
    """Deliberate difference (b): a rail client's TCP port (``-p``) is the old one moved from the client's link
    position to the server's (its first link of the rail), as the server computes it; the old client used its own
    position, another port than its server's where the two hosts list their rails in different orders."""
    server = case["pairs"][run["item"][0]][1]
    rail = rail_of(case, run, host)
    server_position = [position for position, own in enumerate(rail_links(case, server)) if own["rail"] == rail][0]
    assert argv[-3] == "-p"
    return argv[:-2] + [str(int(argv[-2]) - run["item"][1] + server_position)] + argv[-1:]


def gid_index_null_as_written(argv):
    """Found, not deliberate: a port whose gid_index is null (rdma_facts found no RoCE v2 IPv4 GID on it) gave the
    old argv a null after -x, which the command module turned into '' (its argv is a list of str); the filters
    write 'None'. Neither names a GID."""
    return [("None" if value is None and argv[number - 1] == "-x" else value) for number, value in enumerate(argv)]


def as_run(argv):
    """An old argv as the command module ran it: each element converted as its argument spec (list of str) does."""
    return [check_type_str(value) for value in gid_index_null_as_written(argv)]


def expected_servers(case, host):
    old = case["jinja"][host]
    return [dict(SERVER_AGAIN, argv=as_run(run["argv"]), item=run["item"])
            for run in old["servers"] + rail_servers_for_clients_that_run(case, host, old["rail_servers"])]


def expected_clients(case, host):
    old = case["jinja"][host]
    return ([dict(CLIENT_AGAIN, argv=as_run(run["argv"]), item=run["item"]) for run in old["clients"]]
            + [dict(CLIENT_AGAIN, argv=rail_port_of_the_servers_link(case, host, as_run(run["argv"]), run), item=run["item"])
               for run in old["rail_clients"]])


def servers(case, host):
    return roce_validate_perftest_servers(case["hosts"], case["pairs"], host, case["unreachable"], PERFTEST)


def clients(case, host):
    return roce_validate_perftest_clients(case["hosts"], case["pairs"], host, case["batch"], case["unreachable"], PERFTEST)


def test_the_filters_take_the_settings_the_old_tasks_ran_with():
    assert PERFTEST == {"timeout": SETTINGS["validate_rdma_timeout"], "attempts": SETTINGS["validate_rdma_attempts"],
                        "port": SETTINGS["validate_perftest_port"], "tos": SETTINGS["roce_tos"], "bw_seconds": SETTINGS["validate_bw_seconds"],
                        "lat_iterations": SETTINGS["validate_lat_iterations"], "rail_bw_seconds": SETTINGS["validate_rail_bw_seconds"]}
    assert ATTEMPTS == SETTINGS["validate_rdma_attempts"]


@pytest.mark.parametrize("case", CAPTURED["fabrics"], ids=lambda case: case["id"])
def test_each_host_runs_the_perftests_the_roles_loops_ran(case):
    for host in case["batch"]:
        assert servers(case, host) == expected_servers(case, host), host
        assert clients(case, host) == expected_clients(case, host), host


def common_rails(case, host, peer):
    """``host``'s rails that ``peer`` has too, in ``host``'s order."""
    return [own["rail"] for own in rail_links(case, host) if own["rail"] in [other["rail"] for other in rail_links(case, peer)]]


def counts():
    count = Counter()
    for case in CAPTURED["fabrics"]:
        count["fabrics"] += 1
        for host, old in case["jinja"].items():
            count["hosts"] += 1
            for key, runs in old.items():
                count[key] += len(runs)
            count["rail servers without a running client"] += len(old["rail_servers"]) - len(rail_servers_for_clients_that_run(case, host, old["rail_servers"]))
            count["rail clients on the server's port"] += sum(1 for run in old["rail_clients"]
                                                              if rail_port_of_the_servers_link(case, host, as_run(run["argv"]), run) != as_run(run["argv"]))
            count["runs with a null gid_index"] += sum(1 for key in old for run in old[key] if None in run["argv"])
            count["commands compared"] += len(servers(case, host)) + len(clients(case, host))
        count["unreachable pairs"] += sum(1 for pair in case["pairs"] if sorted(pair) in case["unreachable"])
        count["pairs to a partner"] += sum(1 for pair in case["pairs"] if pair[1] in case["partners"])
        count["pairs whose hosts list their rails in other orders"] += sum(
            1 for client, server in case["pairs"] if server in case["batch"] and common_rails(case, client, server) != common_rails(case, server, client))
    return count


def test_the_captured_fabrics_cover_the_cases_that_matter():
    count = counts()
    assert count["fabrics"] == 96 and count["hosts"] >= 200
    assert count["servers"] >= 200 and count["clients"] >= 200 and count["rail_servers"] >= 100 and count["rail_clients"] >= 100
    # each difference is met often enough to be the rule the comparison checks
    assert count["rail servers without a running client"] >= 20
    assert count["rail clients on the server's port"] >= 50
    assert count["runs with a null gid_index"] >= 10
    assert count["unreachable pairs"] >= 10 and count["pairs to a partner"] >= 10
    assert count["pairs whose hosts list their rails in other orders"] >= 20
    fabrics = CAPTURED["fabrics"]
    assert any(not case["hosts"][host].get("validate_ports") for case in fabrics for host in case["batch"])
    assert any(not case["hosts"][host]["validate_ports"][0]["ipv4"] for case in fabrics for host in case["batch"] if case["hosts"][host].get("validate_ports"))
    assert any(len(set(own["rail"] for own in rail_links(case, host))) < len(rail_links(case, host)) for case in fabrics for host in case["batch"])
    assert any(own["interface"] == case["hosts"][host]["validate_ports"][0]["netdev"] for case in fabrics for host in case["batch"]
               for own in rail_links(case, host))


def partner_task():
    """The role's task that starts a partner's servers, as roles/validate/tasks/main.yml has it now."""
    with open(ROLE_TASKS) as handle:
        return [task for task in yaml.safe_load(handle) if task.get("name") == PARTNER_TASK][0]


PARTNER_LOOP = partner_task()["loop"]


def partners_of(case, host, **variables):
    """The partners outside the batch that ``host`` starts servers on, one call each, in order: the role's loop of
    the task rendered by Ansible's Templar as it runs (validate_rdma_run true; without validate__batch, the play's
    batch)."""
    scope = dict(dict(validate_rdma_pair_list=case["pairs"], inventory_hostname=host, ansible_play_batch=case["batch"],
                      validate_rdma_run=True), **variables)
    return Templar(loader=DataLoader(), variables=scope).template(trust_as_template(PARTNER_LOOP))


def old_partner_calls(case, host):
    """What the old task started for ``host`` (one run per item, delegated to the pair's server), grouped by the
    partner it was delegated to in the order of the role's loop, each group in the old order: ``[(partner, commands)]``,
    an argv as the command module ran it (a list of str), with the runs the old server loop gave it
    (validate_rdma_attempts, until one succeeds)."""
    old = case["jinja"][host]["partner_servers"]
    return [(partner, [dict(SERVER_AGAIN, argv=[check_type_str(value) for value in run["argv"]], item=run["item"])
                       for run in old if run["partner"] == partner])
            for partner in partners_of(case, host)]


def partner_calls(case, host):
    """What the role now starts for ``host``: on each partner of its loop, the servers the filter gives with client=."""
    return [(partner, roce_validate_perftest_servers(case["hosts"], case["pairs"], partner, case["unreachable"], PERFTEST, client=host))
            for partner in partners_of(case, host)]


def partner_calls_without_a_command(case, host):
    """Found, not deliberate: the role's loop names each partner of ``host``'s pairs whether or not the pair is
    unreachable, so a partner whose every pair with ``host`` is unreachable gets a call with no command (an
    asynchronous validate_probe that runs nothing, and its wait), where the old task's when skipped its items."""
    return [partner for partner in partners_of(case, host)
            if all(sorted(pair) in case["unreachable"] for pair in case["pairs"] if pair == [host, partner])]


@pytest.mark.parametrize("case", CAPTURED["fabrics"], ids=lambda case: case["id"])
def test_each_host_starts_on_its_partners_the_servers_the_old_task_started(case):
    for host in case["batch"]:
        partners = partners_of(case, host)
        old = case["jinja"][host]["partner_servers"]
        # each partner once, none of the batch, and every partner the old task was delegated to among them
        assert len(set(partners)) == len(partners) and not set(partners) & set(case["batch"]), host
        assert set(run["partner"] for run in old) <= set(partners), host
        assert sum(len(commands) for _partner, commands in old_partner_calls(case, host)) == len(old), host
        assert partner_calls(case, host) == old_partner_calls(case, host), host
        assert [partner for partner, commands in partner_calls(case, host) if not commands] == partner_calls_without_a_command(case, host), host


def rail_servers_for(case, partner, client):
    """The rail servers ``partner`` would run for ``client`` as a host of the batch (without client=)."""
    return [run for run in servers(case, partner) if not isinstance(run["item"][0], str) and case["pairs"][run["item"][0]][0] == client]


def partner_counts():
    count = Counter()
    for case in CAPTURED["fabrics"]:
        for host in case["batch"]:
            calls = partner_calls(case, host)
            old = case["jinja"][host]["partner_servers"]
            count["hosts with partners"] += bool(calls)
            count["hosts with two partners"] += len(calls) > 1
            count["partner calls compared"] += len(calls)
            count["commands compared"] += sum(len(commands) for _partner, commands in calls)
            count["old runs interleaving two partners"] += [run for partner, _commands in calls for run in old if run["partner"] == partner] != old
            count["partner calls without a command"] += len(partner_calls_without_a_command(case, host))
            count["partners with rail servers for the host"] += sum(1 for partner, _commands in calls if rail_servers_for(case, partner, host))
            count["partners serving another host of the batch"] += sum(
                1 for partner, _commands in calls if any(pair[1] == partner and pair[0] != host for pair in case["pairs"]))
            count["partner runs with a null gid_index"] += sum(1 for run in old if "None" in run["argv"])
    return count


def test_the_captured_fabrics_cover_the_partners_cases_that_matter():
    count = partner_counts()
    assert count["hosts with partners"] >= 60 and count["partner calls compared"] >= 70 and count["commands compared"] >= 120
    assert count["hosts with two partners"] >= 5 and count["old runs interleaving two partners"] >= 3
    assert count["partner calls without a command"] >= 5  # the role's task skips them (its when)
    assert count["partners with rail servers for the host"] >= 20  # without client= they would start rail servers
    assert count["partners serving another host of the batch"] >= 10  # client= keeps that host's pairs out
    assert count["partner runs with a null gid_index"] >= 2  # the old task wrote it 'None' (| string), as the filter does


def test_the_role_starts_a_partners_servers_with_the_filter_for_its_client():
    task = partner_task()
    assert task["rdmaops.roce.validate_probe"]["commands"] == "{{ validate_partner_commands }}"
    # a partner whose every pair with the host is unreachable gets no call (the old task started nothing there)
    assert task["when"].split("#")[0].strip() == "validate_partner_commands | length > 0"
    call = " ".join(task["vars"]["validate_partner_commands"].split())
    assert ("hostvars | rdmaops.roce.roce_validate_perftest_servers(validate_rdma_pair_list, item, validate_unreachable_pairs, "
            "validate_perftest_settings, client=inventory_hostname)") in call
    assert task["delegate_to"] == "{{ item }}" and task["rdmaops.roce.validate_probe"]["concurrent"] is True
    case = {"pairs": [["a", "p"], ["a", "b"], ["b", "p"], ["a", "q"], ["a", "p"]], "batch": ["a", "b"]}
    assert partners_of(case, "a") == ["p", "q"]
    assert partners_of(case, "a", validate__batch=["a", "b", "p"]) == ["q"]  # a batch of serial's the role was given
    assert partners_of(case, "a", validate_rdma_run=False) == []
    assert partners_of(case, "b") == ["p"]


def listening(case, era):
    """``(servers, clients)``: per server host and rail TCP port, how many rail servers listen there and how many rail
    clients connect there, as the old loops (``"old"``) or the filters (``"new"``) run them."""
    listen, connect = Counter(), Counter()
    for host in case["batch"]:
        if era == "old":
            rail_servers = [as_run(run["argv"]) for run in case["jinja"][host]["rail_servers"]]
            rail_clients = [(as_run(run["argv"]), run["item"]) for run in case["jinja"][host]["rail_clients"]]
        else:
            rail_servers = [run["argv"] for run in servers(case, host) if not isinstance(run["item"][0], str)]
            rail_clients = [(run["argv"], run["item"]) for run in clients(case, host) if not isinstance(run["item"][0], str)]
        listen.update((host, argv[argv.index("-p") + 1]) for argv in rail_servers)
        connect.update((case["pairs"][item[0]][1], argv[argv.index("-p") + 1]) for argv, item in rail_clients)
    return listen, connect


def test_each_rail_server_has_its_client_and_each_client_its_server():
    """What the two deliberate differences are for, on the fabrics where each host has each rail once (as the rail
    plan gives them): every rail server has its client and every rail client its server, one on each port, but where
    the server's link of the rail is down (the client runs anyway: its failure is the finding). The old loops missed
    both ways."""
    missed = Counter()
    for case in CAPTURED["fabrics"]:
        if any(len(set(own["rail"] for own in rail_links(case, host))) < len(rail_links(case, host)) for host in case["batch"]):
            continue
        for era in ("old", "new"):
            listen, connect = listening(case, era)
            missed[era, "servers without a client"] += sum(1 for key in listen if not connect[key])
            missed[era, "clients without a server"] += sum(1 for key in connect if not listen[key])
            missed[era, "ports shared"] += sum(1 for key in set(listen) | set(connect) if listen[key] > 1 or connect[key] > 1)
            for server, tcp_port in connect if era == "new" else ():
                if not listen[server, tcp_port]:
                    position = (int(tcp_port) - PERFTEST["port"] - 2 * len(case["pairs"])) % 16  # 16 ports a pair
                    assert not behind_active_port(case, server, rail_links(case, server)[position]), (case["id"], server, tcp_port)
    assert missed["new", "servers without a client"] == 0 and missed["new", "ports shared"] == 0
    assert missed["old", "servers without a client"] >= 20 and missed["old", "clients without a server"] >= 20


# a: rail0 then rail1; b: rail1 then rail0, its rail0 NIC down (no active port behind it)
FABRIC = {
    "a": {"validate_ports": [port("10.0.0.1", netdev="ens0"), port("172.16.0.1", netdev="ens1", device="mlx5_1"),
                             port("172.16.1.1", netdev="ens2", device="mlx5_2")],
          "validate_rail_links": [link("rail0", "ens1", "172.16.0.1"), link("rail1", "ens2", "172.16.1.1")]},
    "b": {"validate_ports": [port("10.0.0.2", netdev="ens0"), port("172.16.1.2", netdev="ens1", device="mlx5_1")],
          "validate_rail_links": [link("rail1", "ens1", "172.16.1.2"), link("rail0", "ens2", "172.16.0.2")]},
}
PAIRS = [["a", "b"], ["b", "a"]]


def rail_runs(runs):
    """``(item, TCP port, and the server's address for a client)`` of each rail run."""
    return [(run["item"], run["argv"][run["argv"].index("-p") + 1:]) for run in runs if not isinstance(run["item"][0], str)]


def test_the_two_deliberate_differences_on_one_fabric():
    base = PERFTEST["port"] + 2 * len(PAIRS)  # the rails' ports, after the two of each pair
    # pair 0, a to b: b serves rail1 (its link 0); its rail0 NIC is down, so it serves no rail0. a's clients take b's
    # link positions (b): rail0 (a's link 0) to b's link 1, where nothing listens (the failure is the finding), rail1
    # (a's link 1) to b's link 0. The old loops took a's own positions: a's rail0 NIC against b's rail1 server, and
    # a's rail1 client on a port without a server.
    assert rail_runs(roce_validate_perftest_servers(FABRIC, PAIRS, "b", [], PERFTEST)) == [([0, 0], [str(base + 0)])]
    assert rail_runs(roce_validate_perftest_clients(FABRIC, PAIRS, "a", ["a", "b"], [], PERFTEST)) == [
        ([0, 0], [str(base + 1), "10.0.0.2"]), ([0, 1], [str(base + 0), "10.0.0.2"])]
    # pair 1, b to a: b runs no rail0 client (no active port), so a starts no rail0 server (a), as the old loop did;
    # a's rail1 server (its link 1) is where b's rail1 client (b's link 0) goes (b); the old client went to a's link 0
    assert rail_runs(roce_validate_perftest_servers(FABRIC, PAIRS, "a", [], PERFTEST)) == [([1, 1], [str(base + 16 + 1)])]
    assert rail_runs(roce_validate_perftest_clients(FABRIC, PAIRS, "b", ["a", "b"], [], PERFTEST)) == [([1, 0], [str(base + 16 + 1), "10.0.0.1"])]


def settings(**changes):
    return dict(PERFTEST, **changes)


@pytest.mark.parametrize("call, words", [
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "a", [], dict((key, value) for key, value in PERFTEST.items() if key != "tos")),
     ["roce_validate_perftest_servers: the perftest settings must be a mapping of timeout, attempts, port, tos, bw_seconds, lat_iterations, "
      "rail_bw_seconds to whole numbers, got a mapping", "validate_perftest_settings"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, "a", ["a", "b"], [], settings(extra=1)), ["the perftest settings must be a mapping of"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "a", [], [120, 2]), ["the perftest settings must be a mapping", "got a list"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "a", [], settings(port="18515")),
     ['perftest setting port must be a whole number, got text ("18515")', "validate_perftest_settings"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, "a", ["a", "b"], [], settings(bw_seconds=2.5)),
     ["perftest setting bw_seconds must be a whole number, got a decimal number (2.5)"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, "a", ["a", "b"], [], settings(attempts=True)), ["perftest setting attempts must be a whole number"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "a", [], settings(timeout=0)),
     ["timeout and attempts must be at least 1", "set validate_rdma_timeout and validate_rdma_attempts from 1"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, "a", ["a", "b"], [], settings(attempts=0)), ["timeout and attempts must be at least 1"]),
    (lambda: roce_validate_perftest_servers(["a"], PAIRS, "a", [], PERFTEST), ["roce_validate_perftest_servers: its input must be hostvars"]),
    (lambda: roce_validate_perftest_servers(FABRIC, "a-b", "a", [], PERFTEST), ["the pairs must be a list of [client, server]", "validate_rdma_pair_list"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "a", None, PERFTEST), ["the unreachable pairs must be", "validate_unreachable_pairs"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, None, ["a", "b"], [], PERFTEST), ["the host must be a host name, got null", "inventory_hostname"]),
    (lambda: roce_validate_perftest_clients(FABRIC, PAIRS, "a", "a,b", [], PERFTEST), ["the batch must be a list of host names", "ansible_play_batch"]),
    (lambda: roce_validate_perftest_clients(dict(FABRIC, c={"validate_ports": [port(None)]}), [["a", "c"]], "a", ["a", "c"], [], PERFTEST),
     ["roce_validate_perftest_clients: host c is in the pairs but has no RDMA address", "roce_validate_pairs"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "b", [], PERFTEST, client=["a"]),
     ["roce_validate_perftest_servers: the client must be a host name, got a list", "pass inventory_hostname, or leave it out"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "b", [], PERFTEST, client=7), ["the client must be a host name, got a number (7)"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "b", [], PERFTEST, client={"a": 1}), ["the client must be a host name, got a mapping"]),
    (lambda: roce_validate_perftest_servers(FABRIC, PAIRS, "b", [], PERFTEST, client=True), ["the client must be a host name, got a boolean"]),
])
def test_bad_input_to_the_perftest_filters_is_refused_in_words(call, words):
    with pytest.raises(AnsibleFilterError) as error:
        call()
    for word in words:
        assert word in str(error.value)
    assert not re.search(r"\b(str|dict|NoneType|int|float|bool|tuple|Traceback)\b", str(error.value)), str(error.value)


def test_each_perftest_filter_reads_only_the_hosts_its_commands_name():
    names = ["h%03d" % index for index in range(200)]
    hosts = {}
    for index, name in enumerate(names):
        rail_address = "172.16.%d.%d" % divmod(index + 1, 250)
        hosts[name] = {"validate_ports": [port("10.1.%d.%d" % divmod(index + 1, 250), netdev="ens0"), port(rail_address, netdev="ens1")],
                       "validate_rail_links": [link("rail0", "ens1", rail_address)]}
    ring = [[name, names[(index + 1) % len(names)]] for index, name in enumerate(names)]
    hostvars = CountingHostvars(hosts)
    got = roce_validate_perftest_servers(hostvars, ring, "h007", [], PERFTEST)
    assert [run["item"] for run in got] == [["ib_write_bw", 6], ["ib_write_lat", 6], [6, 0]]
    assert sorted(hostvars.read) == ["h006", "h007"]  # the host and the client it serves
    hostvars = CountingHostvars(hosts)
    got = roce_validate_perftest_clients(hostvars, ring, "h007", names, [], PERFTEST)
    assert [run["item"] for run in got] == [["ib_write_bw", 7], ["ib_write_lat", 7], [7, 0]]
    assert sorted(hostvars.read) == ["h007", "h008"]  # the host and its server


def test_a_partners_servers_for_its_client_start_no_rail_server():
    """A partner outside the batch may hold rail links with active ports behind them (from a play in which it was of
    the batch); its client runs no rail test against it, so with client= it starts none, only the first port's two
    servers of each pair of that client, the same as without client=."""
    hosts = dict(FABRIC, p={"validate_ports": [port("10.0.0.9", netdev="ens0"), port("172.16.0.9", netdev="ens1", device="mlx5_1"),
                                               port("172.16.1.9", netdev="ens2", device="mlx5_2")],
                            "validate_rail_links": [link("rail0", "ens1", "172.16.0.9"), link("rail1", "ens2", "172.16.1.9")]})
    pairs = [["a", "p"], ["b", "p"], ["a", "b"], ["a", "p"]]
    every = roce_validate_perftest_servers(hosts, pairs, "p", [], PERFTEST)
    # as a host of the batch, p would serve a on both rails (pairs 0 and 3) and b on rail1, its rail0 NIC down (pair 1)
    assert [item for item, _tail in rail_runs(every)] == [[0, 0], [0, 1], [1, 1], [3, 0], [3, 1]]
    for client, indexes in (("a", [0, 3]), ("b", [1])):
        got = roce_validate_perftest_servers(hosts, pairs, "p", [], PERFTEST, client=client)
        assert [run["item"] for run in got] == [[test, index] for test in ("ib_write_bw", "ib_write_lat") for index in indexes]
        assert got == [run for run in every if isinstance(run["item"][0], str) and run["item"][1] in indexes]
    assert roce_validate_perftest_servers(hosts, pairs, "p", [["a", "p"]], PERFTEST, client="a") == []  # its pairs unreachable
    assert roce_validate_perftest_servers(hosts, pairs, "p", [], PERFTEST, client="c") == []


def test_a_partners_servers_for_one_client_read_only_the_partner_and_the_client():
    names = ["h%03d" % index for index in range(200)]
    hosts = {}
    for index, name in enumerate(names + ["p"]):
        rail_address = "172.16.%d.%d" % divmod(index + 1, 250)
        hosts[name] = {"validate_ports": [port("10.1.%d.%d" % divmod(index + 1, 250), netdev="ens0"), port(rail_address, netdev="ens1")],
                       "validate_rail_links": [link("rail0", "ens1", rail_address)]}
    star = [[name, "p"] for name in names]  # p, a partner outside the batch, serves every host
    hostvars = CountingHostvars(hosts)
    got = roce_validate_perftest_servers(hostvars, star, "p", [], PERFTEST, client="h007")
    assert [run["item"] for run in got] == [["ib_write_bw", 7], ["ib_write_lat", 7]]
    assert sorted(hostvars.read) == ["h007", "p"]  # once each
    hostvars = CountingHostvars(hosts)
    roce_validate_perftest_servers(hostvars, star, "p", [], PERFTEST)
    assert sorted(hostvars.read) == sorted(names + ["p"])  # without client=, every client it serves
