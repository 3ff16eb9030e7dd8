"""ofed_info -s against the versions NVIDIA has shipped."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import ofed_info as parsers

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools")


def fixture(*parts):
    with open(os.path.join(TOOLS, *parts)) as handle:
        return handle.read()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("MLNX_OFED_LINUX-23.10-1.1.9.0:", ("MLNX_OFED_LINUX", "23.10-1.1.9.0", 23)),
        ("OFED-internal-24.04-0.6.6:", ("OFED-internal", "24.04-0.6.6", 24)),
        ("OFED-internal-24.10-1.1.4.0.200:", ("OFED-internal", "24.10-1.1.4.0.200", 24)),
        ("OFED-internal-25.10-1.7.1:", ("OFED-internal", "25.10-1.7.1", 25)),
        ("OFED-internal-5.0-1.0.0.0:", ("OFED-internal", "5.0-1.0.0.0", 5)),
    ],
)
def test_ofed_info_samples(line, expected):
    assert line in fixture("ofed_info", "samples.txt").splitlines()
    parsed = parsers.parse_ofed_info(line + "\n")
    assert (parsed["distribution"], parsed["version"], parsed["major"]) == expected


@pytest.mark.parametrize("text", ["", "ofed_info: command not found", "MLNX_OFED_LINUX:"])
def test_ofed_info_rejects_non_versions(text):
    assert parsers.parse_ofed_info(text) is None


def test_ofed_info_finds_the_version_line_among_others():
    assert parsers.parse_ofed_info("some banner\nMLNX_OFED_LINUX-5.8-3.0.7.0:\n")["version"] == "5.8-3.0.7.0"
    assert parsers.parse_ofed_info("MLNX_OFED_LINUX-5.8-3.0.7.0: trailing words\n") is None
