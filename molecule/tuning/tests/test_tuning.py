"""What rdmaops.roce.tuning leaves on a host: the files, and the values the kernel and systemd use."""

PROFILE = (
    "# Managed by rdmaops.roce (rdmaops.roce.sysctl_profile). Changes here are overwritten on the next run.\n"
    "# Put local overrides in a file that sorts after this one, e.g. 99-local.conf.\n"
    "net.core.netdev_max_backlog = 250000\n"
    "net.core.optmem_max = 4194304\n"
    "net.core.rmem_default = 4194304\n"
    "net.core.rmem_max = 4194304\n"
    "net.core.wmem_default = 4194304\n"
    "net.core.wmem_max = 4194304\n"
    "net.ipv4.tcp_rmem = 4096 87380 4194304\n"
    "net.ipv4.tcp_sack = 1\n"
    "net.ipv4.tcp_timestamps = 0\n"
    "net.ipv4.tcp_wmem = 4096 65536 4194304\n"
)


def test_sysctl_profile_file(host):
    conf = host.file("/etc/sysctl.d/90-rdmaops-roce.conf")
    assert conf.is_file and conf.user == "root" and conf.mode == 0o644
    assert conf.content_string == PROFILE


def test_sysctl_file_is_what_the_system_tools_read(host):
    """procps parses the file without complaint (a syntax error would make it exit non-zero)."""
    # -p only parses and prints here: the values are already in force, and net.core keys are
    # refused inside the container, so only the per-namespace lines are checked for their output.
    out = host.run("sysctl -p /etc/sysctl.d/90-rdmaops-roce.conf 2>/dev/null | grep ^net.ipv4")
    assert out.stdout.splitlines() == [
        "net.ipv4.tcp_rmem = 4096 87380 4194304",
        "net.ipv4.tcp_sack = 1",
        "net.ipv4.tcp_timestamps = 0",
        "net.ipv4.tcp_wmem = 4096 65536 4194304",
    ]


def test_per_namespace_values_are_in_force(host):
    assert host.file("/proc/sys/net/ipv4/tcp_rmem").content_string == "4096\t87380\t4194304\n"
    assert host.file("/proc/sys/net/ipv4/tcp_wmem").content_string == "4096\t65536\t4194304\n"
    assert host.file("/proc/sys/net/ipv4/tcp_timestamps").content_string == "0\n"


def test_memlock_limits_file(host):
    limits = host.file("/etc/security/limits.d/90-rdmaops-roce-memlock.conf")
    assert limits.mode == 0o644
    rules = [line.split() for line in limits.content_string.splitlines() if line and not line.startswith("#")]
    assert rules == [
        ["*", "soft", "memlock", "unlimited"],
        ["*", "hard", "memlock", "unlimited"],
        ["root", "soft", "memlock", "unlimited"],
        ["root", "hard", "memlock", "unlimited"],
    ]


def test_systemd_default_memlock(host):
    dropin = host.file("/etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf")
    assert "[Manager]\nDefaultLimitMEMLOCK=infinity\n" in dropin.content_string
    # systemd re-executed and took the drop-in. (Inside this container the services it starts
    # stay capped at the container's own hard limit, which the CI sandbox does not let us raise.)
    show = host.run("systemctl show --property=DefaultLimitMEMLOCK --property=DefaultLimitMEMLOCKSoft")
    assert show.stdout.split() == ["DefaultLimitMEMLOCK=infinity", "DefaultLimitMEMLOCKSoft=infinity"]
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_no_udev_rule_for_a_nic_without_supported_knobs(host):
    """eth0 is a veth: every knob was reported unsupported (see converge.yml), so nothing is persisted."""
    assert not host.file("/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules").exists
