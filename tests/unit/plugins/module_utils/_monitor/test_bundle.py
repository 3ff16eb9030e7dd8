"""The generated collector script: the collection's own code, runnable without ansible, the same bytes every time."""

import json
import os
import subprocess
import sys

from monitortrees import intent, rxe_host

from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import bundle


def test_the_closure_is_the_collection_and_six_only():
    modules = bundle.closure()
    foreign = [name for name in modules if not name.startswith(bundle.COLLECTION)]
    assert foreign == ["ansible.module_utils.six"]
    # the readers and checks the modules use, not copies of them
    for name in ("_validate.host", "_validate.verdict", "_host.rdma_facts", "_nic_layer", "_monitor.collector"):
        assert "%s.%s" % (bundle.COLLECTION, name) in modules
    # os_facts (ansible's fact collectors) is imported inside a function only: not bundled
    assert "%s._host.os_facts" % bundle.COLLECTION not in modules


def test_the_script_is_deterministic():
    one = bundle.render_script("/usr/bin/python3", "0.1.0")
    assert one == bundle.render_script("/usr/bin/python3", "0.1.0")
    assert one.startswith("#!/usr/bin/python3\n" + bundle.MARKER + "\n")


def test_the_script_runs_without_ansible_and_writes_the_metrics(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    (root / "etc/rdmaops").mkdir(parents=True)
    (root / "etc/rdmaops/monitor-intent.json").write_text(json.dumps(dict(intent=intent(), host="vm1", interval=15)))
    (root / "var/lib/prometheus/node-exporter").mkdir(parents=True)
    script = tmp_path / "rdmaops-roce-collector"
    script.write_text(bundle.render_script(sys.executable, "0.1.0"))
    # systemd's CacheDirectory: the compiled code is kept there; an older bundle's cache goes
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "0000000000000000-cpython-00.marshal").write_text("stale")
    # -S -E: no site-packages (so no ansible), no PYTHONPATH: only what the script carries
    env = dict(RDMAOPS_HOST_ROOT=str(root), PATH=os.pathsep.join(bindirs + ["/usr/bin", "/bin"]), CACHE_DIRECTORY=str(cache))
    texts = []
    for _run in range(2):
        proc = subprocess.run([sys.executable, "-S", "-E", str(script), "--intent", "/etc/rdmaops/monitor-intent.json",
                               "--textfile-dir", "/var/lib/prometheus/node-exporter"], env=env, capture_output=True, text=True,
                              check=False, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        texts.append((root / "var/lib/prometheus/node-exporter/rdmaops_roce.prom").read_text())
        assert [name.endswith(".marshal") and not name.startswith("0000") for name in os.listdir(str(cache))] == [True]
    # the second run loaded the cached code and wrote the same metrics (but the clock's)
    assert [line for line in texts[0].splitlines() if "collector_" not in line] == \
        [line for line in texts[1].splitlines() if "collector_" not in line]
    text = texts[1]
    assert "rdmaops_roce_collector_success 1" in text.splitlines()
    assert 'rdmaops_roce_intent_drift{check="mtu"} 0' in text.splitlines()
    assert 'rdmaops_roce_hw_sent_pkts_total{device="rxe0",netdev="ens4",port="1"} 0' in text.splitlines()
