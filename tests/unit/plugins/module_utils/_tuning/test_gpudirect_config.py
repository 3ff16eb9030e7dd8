"""gpudirect_config on the CX-7 GPU server tree: ACS cleared with setpci and a boot unit, iommu=pt
through grubby or a GRUB drop-in. The tools are simulated with state (setpci changes what lspci
prints next; grubby keeps its entries); the GRUB defaults are read as data, never by a shell (the
simulated runner refuses sh), and the reading is compared with what a real sh gives for them."""

import os
import re
import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import gpudirect_config as gc
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.grub_defaults import GrubDefaults
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError, VerifyError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandResult
from gputree import gpudirect_tree, lspci_text, tree_files

ON_PATHS = ["0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]  # redirecting, upstream of a GPU or NIC
# bridges upstream of a GPU or NIC with an ACS capability that can redirect (3a:00.0 does not redirect now)
TARGETS = ["0000:3a:00.0", "0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]


class SimRunner:
    """lspci/setpci/grubby/update-grub with state; ``missing`` tools are absent; anything else (sh!) is refused."""

    def __init__(self, lspci=None, grubby_entries=None, missing=(), setpci_sticks=True):
        self.lspci = lspci if lspci is not None else lspci_text("cx7-gpu-server-acs-on.txt")
        self.grubby = grubby_entries
        self.missing = set(missing) | (set() if grubby_entries is not None else {"grubby"})
        self.setpci_sticks = setpci_sticks
        self.calls = []
        self.commands = []

    def find(self, tool):
        return None if tool in self.missing else "/usr/bin/" + tool

    def has(self, tool):
        return self.find(tool) is not None

    def run(self, argv, check=True):
        self.calls.append(list(argv))
        tool = argv[0]
        if tool == "lspci":
            return CommandResult(argv, 0, self.lspci, "")
        if tool == "setpci":
            if self.setpci_sticks:
                self._clear(argv[2])
            return CommandResult(argv, 0, "", "")
        if tool == "grubby" and argv[1] == "--info=ALL":
            out = "".join('index=%d\nkernel="%s"\nargs="%s"\nroot="/dev/md0"\n' % (i, k, a) for i, (k, a) in enumerate(sorted(self.grubby.items())))
            return CommandResult(argv, 0, out, "")
        if tool == "grubby" and argv[1] == "--update-kernel=ALL":
            added = argv[2].split("=", 1)[1].split()
            for kernel, args in self.grubby.items():
                self.grubby[kernel] = " ".join(args.split() + [a for a in added if a not in args.split()])
            return CommandResult(argv, 0, "", "")
        if tool in ("update-grub", "grub-mkconfig"):
            return CommandResult(argv, 0, "", "Generating grub configuration file ...\ndone\n")
        raise AssertionError("unexpected command %r" % (argv,))

    def _clear(self, bdf):
        lines, current = [], None
        for line in self.lspci.splitlines(True):
            if re.match(r"^[0-9a-f]{4}:", line):
                current = line.split()[0]
            if current == bdf and "ACSCtl:" in line:
                for bit in ("ReqRedir", "CmpltRedir", "EgressCtrl"):
                    line = line.replace(bit + "+", bit + "-")
            lines.append(line)
        self.lspci = "".join(lines)


class FakeModule:
    def __init__(self, check_mode):
        self.check_mode = check_mode
        self._diff = False


def engine(host, runner, check=False, **params):
    return gc.GpuDirectConfig(Context(FakeModule(check), host=host, runner=runner), params)


def run(host, runner, check=False, **params):
    outcome, plan = execute(engine(host, runner, check, **params))
    return plan, outcome


def unit_path(root):
    return os.path.join(str(root), "etc/systemd/system", gc.DEFAULT_UNIT)


# -- ACS --------------------------------------------------------------------------------------
def test_acs_disable_clears_the_gpu_paths_and_writes_the_boot_unit(tmp_path):
    host, runner = gpudirect_tree(tmp_path), SimRunner()
    plan, outcome = run(host, runner, acs="disable")
    setpci = [c for c in runner.calls if c[0] == "setpci"]
    assert setpci == [["setpci", "-s", bdf, "ECAP_ACS+0x6.w=0000:002c"] for bdf in ON_PATHS]
    # the PCH port 00:1c.0 redirects too, but only leads to the management NIC
    assert "0000:00:1c.0" not in str(setpci)
    acs = outcome["acs"]
    assert acs["targets"] == TARGETS
    assert acs["redirecting_before"] == dict((bdf, ["ReqRedir", "CmpltRedir"]) for bdf in ON_PATHS)
    assert acs["redirecting_after"] == {}
    assert outcome["gpudirect"]["acs"]["redirecting_on_gpu_paths"] == []
    # peer-to-peer DMA re-routed under a job: classed with a link reset (the boot unit is online)
    assert plan.disruption == "link_reset"
    with open(unit_path(tmp_path)) as handle:
        unit = handle.read()
    assert [line for line in unit.splitlines() if line.startswith("ExecStart=")] == [
        "ExecStart=/usr/bin/setpci -s %s ECAP_ACS+0x6.w=0000:002c" % bdf for bdf in TARGETS
    ]
    assert "Type=oneshot" in unit and "WantedBy=multi-user.target" in unit
    link = os.path.join(str(tmp_path), "etc/systemd/system/multi-user.target.wants", gc.DEFAULT_UNIT)
    assert os.readlink(link) == "/etc/systemd/system/" + gc.DEFAULT_UNIT
    assert plan.descriptions()[-2:] == ["write /etc/systemd/system/%s" % gc.DEFAULT_UNIT, "enable %s" % gc.DEFAULT_UNIT]

    # second run (and a run after a reboot, when the unit has cleared the bits): nothing to do
    plan, outcome = run(host, runner, acs="disable")
    assert not plan.changed and outcome["acs"]["redirecting_before"] == {}


def test_acs_check_mode_predicts_and_changes_nothing(tmp_path):
    host, runner = gpudirect_tree(tmp_path), SimRunner()
    before = tree_files(tmp_path)
    plan, outcome = run(host, runner, check=True, acs="disable")
    assert plan.changed and len([d for d in plan.descriptions() if d.startswith("clear ACS")]) == 3
    assert [c[0] for c in runner.calls] == ["lspci"]
    assert tree_files(tmp_path) == before
    diff = plan.diff()
    assert diff[0]["before"]["acs:0000:3c:00.0"] == ["ReqRedir", "CmpltRedir"] and diff[0]["after"]["acs:0000:3c:00.0"] == []
    assert diff[1]["after_header"].endswith(gc.DEFAULT_UNIT)


def test_acs_scope_all_includes_the_pch_port(tmp_path):
    host, runner = gpudirect_tree(tmp_path), SimRunner()
    _plan, outcome = run(host, runner, acs="disable", acs_scope="all", acs_persist=False)
    assert "0000:00:1c.0" in outcome["acs"]["redirecting_before"]
    assert outcome["gpudirect"]["acs"]["redirecting"] == []
    assert not os.path.exists(unit_path(tmp_path))


def test_acs_write_that_does_not_stick_is_an_error(tmp_path):
    host, runner = gpudirect_tree(tmp_path), SimRunner(setpci_sticks=False)
    with pytest.raises(VerifyError, match=r"^after applying: ACS still redirects after setpci on 0000:3c:00.0 \(ReqRedir/CmpltRedir\)"):
        run(host, runner, acs="disable")


@pytest.mark.parametrize(
    "runner, message",
    [
        (SimRunner(missing=["lspci"]), "the ACS state, which could not be read: lspci is not installed"),
        (SimRunner(lspci=lspci_text("nonroot-access-denied.txt")), "could not be read: lspci could not read PCI capabilities \\(run as root\\)"),
        (SimRunner(missing=["setpci"]), "^setpci is not installed \\(package pciutils\\)"),
    ],
)
def test_acs_refuses_before_touching_anything(tmp_path, runner, message):
    host = gpudirect_tree(tmp_path)
    before = tree_files(tmp_path)
    with pytest.raises(RefusedError, match=message):
        run(host, runner, acs="disable")
    assert tree_files(tmp_path) == before
    assert not [c for c in runner.calls if c[0] == "setpci"]


def test_keep_changes_nothing_and_reads_once(tmp_path):
    host, runner = gpudirect_tree(tmp_path), SimRunner()
    plan, outcome = run(host, runner)
    assert not plan.changed and outcome["acs"] is None and outcome["iommu"] is None
    assert runner.calls == [["lspci", "-D", "-vvv"]]


# -- IOMMU: grubby ----------------------------------------------------------------------------
def test_grubby_adds_iommu_pt_to_every_entry(tmp_path):
    host = gpudirect_tree(tmp_path, cmdline="BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-427.el9.x86_64 ro crashkernel=1G-4G:192M")
    entries = {"/boot/vmlinuz-5.14.0-427.el9.x86_64": "ro crashkernel=1G-4G:192M", "/boot/vmlinuz-5.14.0-362.el9.x86_64": "ro iommu=pt"}
    runner = SimRunner(grubby_entries=dict(entries))
    plan, outcome = run(host, runner, iommu="passthrough")
    assert ["grubby", "--update-kernel=ALL", "--args=iommu=pt"] in runner.calls
    iommu = outcome["iommu"]
    assert iommu["method"] == "grubby" and iommu["missing_before"] == ["iommu=pt"]
    assert iommu["boot_config_after"]["/boot/vmlinuz-5.14.0-427.el9.x86_64"] == "ro crashkernel=1G-4G:192M iommu=pt"
    assert iommu["reboot_required"] is True and iommu["running_cmdline_has_args"] is False
    assert plan.disruption == "reboot"
    plan, outcome = run(host, runner, iommu="passthrough")
    assert not plan.changed and outcome["iommu"]["missing_before"] == []
    assert plan.disruption == "none"
    assert outcome["iommu"]["reboot_required"] is True  # still, until the host reboots


# -- IOMMU: GRUB defaults (Debian, Ubuntu) ------------------------------------------------------
def grub_files(root, main, dropins=None):
    os.makedirs(os.path.join(str(root), "etc/default/grub.d"), exist_ok=True)
    with open(os.path.join(str(root), "etc/default/grub"), "w") as handle:
        handle.write(main)
    for name, text in (dropins or {}).items():
        with open(os.path.join(str(root), "etc/default/grub.d", name), "w") as handle:
            handle.write(text)


UBUNTU_GRUB = (
    "GRUB_DEFAULT=0\nGRUB_TIMEOUT_STYLE=hidden\nGRUB_TIMEOUT=0\n"
    "GRUB_DISTRIBUTOR=`( . /etc/os-release 2>/dev/null; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`\n"
    'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\nGRUB_CMDLINE_LINUX=""\n'
)
CLOUDIMG = '# Cloud Image specific Grub settings\nGRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0"\n'


def test_grub_dropin_appends_the_argument_and_runs_update_grub(tmp_path):
    host = gpudirect_tree(tmp_path, cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro console=tty1 console=ttyS0")
    grub_files(tmp_path, UBUNTU_GRUB, {"50-cloudimg-settings.cfg": CLOUDIMG})
    runner = SimRunner()
    plan, outcome = run(host, runner, iommu="passthrough", kernel_args=["iommu=pt", "intel_iommu=on"])
    assert plan.disruption == "reboot"  # the drop-in and update-grub take effect at the next boot
    with open(os.path.join(str(tmp_path), "etc/default/grub.d/90-rdmaops-gpudirect.cfg")) as handle:
        dropin = handle.read()
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} iommu=pt intel_iommu=on"' in dropin
    assert ["update-grub"] in runner.calls
    iommu = outcome["iommu"]
    # the cloud image's drop-in replaced "quiet splash"; ours sorts after it and appends
    assert iommu["boot_config_before"] == "console=tty1 console=ttyS0"
    assert iommu["boot_config_after"] == "console=tty1 console=ttyS0 iommu=pt intel_iommu=on"
    assert iommu["reboot_required"] is True
    runner.calls = []
    plan, _outcome = run(host, runner, iommu="passthrough", kernel_args=["iommu=pt", "intel_iommu=on"])
    assert not plan.changed and ["update-grub"] not in runner.calls


def test_grub_already_configured_by_the_user_is_not_added_again(tmp_path):
    host = gpudirect_tree(tmp_path)  # the running kernel has intel_iommu=on iommu=pt
    grub_files(tmp_path, UBUNTU_GRUB.replace('"quiet splash"', '"quiet splash iommu=pt"'))
    runner = SimRunner(missing=["update-grub", "grub-mkconfig"])
    plan, outcome = run(host, runner, iommu="passthrough")
    assert not plan.changed
    assert outcome["iommu"]["missing_before"] == [] and outcome["iommu"]["reboot_required"] is False
    assert not os.path.exists(os.path.join(str(tmp_path), "etc/default/grub.d/90-rdmaops-gpudirect.cfg"))


def test_grub_without_a_generator_is_refused(tmp_path):
    host = gpudirect_tree(tmp_path)
    grub_files(tmp_path, UBUNTU_GRUB)
    with pytest.raises(RefusedError, match="neither update-grub nor grub-mkconfig is installed"):
        run(host, SimRunner(missing=["update-grub", "grub-mkconfig"]), iommu="passthrough")
    assert not os.path.exists(os.path.join(str(tmp_path), "etc/default/grub.d/90-rdmaops-gpudirect.cfg"))


def test_no_known_boot_loader_is_refused(tmp_path):
    host = gpudirect_tree(tmp_path)
    with pytest.raises(RefusedError, match="neither grubby nor /etc/default/grub, .* Add iommu=pt there yourself"):
        run(host, SimRunner(), iommu="passthrough")


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(acs="off"), "acs must be one of keep, disable"),
        (dict(iommu="pt"), "iommu must be one of keep, passthrough"),
        (dict(acs_scope="bridges"), "acs_scope must be one of gpu_paths, all"),
        (dict(iommu="passthrough", kernel_args=[]), "kernel_args is empty"),
        (dict(iommu="passthrough", kernel_args=["iommu=pt quiet"]), "'iommu=pt quiet': each must be one kernel parameter"),
        (dict(acs_unit="../x.service"), "must be a unit file name ending in .service"),
    ],
)
def test_bad_arguments(tmp_path, params, message):
    runner = SimRunner()
    with pytest.raises(InputError, match=re.escape(message)):
        engine(gpudirect_tree(tmp_path), runner, **params).validate()
    assert runner.calls == []


# -- the GRUB defaults are read as data: nothing in them runs -----------------------------------
# What grub-mkconfig's sh gives, for comparison: the main file, then the drop-ins in order.
GRUB_EVAL = 'set -e; . "$1"; shift; for f in "$@"; do . "$f"; done; printf "%s %s\\n" "${GRUB_CMDLINE_LINUX:-}" "${GRUB_CMDLINE_LINUX_DEFAULT:-}"'

WELL_FORMED = [
    (UBUNTU_GRUB, {"50-cloudimg-settings.cfg": CLOUDIMG}),
    (UBUNTU_GRUB, {"50-cloudimg-settings.cfg": CLOUDIMG, "90-rdmaops-gpudirect.cfg": gc.GRUB_TEMPLATE.format(args="iommu=pt")}),
    ("GRUB_CMDLINE_LINUX='console=ttyS0,115200n8 \"quoted\"'\nGRUB_CMDLINE_LINUX_DEFAULT=quiet\n", {}),
    ('GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n# GRUB_CMDLINE_LINUX_DEFAULT="not this"\nexport GRUB_CMDLINE_LINUX="a=1 \\\n  b=2"\n',
     {"10-a.cfg": 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT c=3"; X=1\n',
      "20-b.cfg": 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} ${UNSET:-d=4} ${GRUB_CMDLINE_LINUX:+e=5}"\n',
      "30-c.cfg": 'if [ -n "$X" ]; then\n  GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} f=\\"6\\""\nfi\n',
      "README": 'GRUB_CMDLINE_LINUX="not a .cfg file"\n'}),
    ('GRUB_CMDLINE_LINUX_DEFAULT=""\nGRUB_CMDLINE_LINUX=""\n', {}),
]


@pytest.mark.parametrize("main, dropins", WELL_FORMED)
def test_grub_reading_matches_sh_for_well_formed_files(tmp_path, main, dropins):
    host = gpudirect_tree(tmp_path)
    grub_files(tmp_path, main, dropins)
    ours = engine(host, SimRunner())._grub_cmdline(without_ours=False)
    paths = [os.path.join(str(tmp_path), "etc/default/grub")] + sorted(
        os.path.join(str(tmp_path), "etc/default/grub.d", name) for name in dropins if name.endswith(".cfg"))
    done = subprocess.run(["sh", "-c", GRUB_EVAL, "sh"] + paths, capture_output=True, text=True, check=True)
    assert ours == done.stdout.split()


def test_grub_reader_appends_with_plus_equals_and_keeps_the_order():
    defaults = GrubDefaults()
    defaults.source('GRUB_CMDLINE_LINUX="a"\nGRUB_CMDLINE_LINUX+=" b"\n', "/etc/default/grub")
    defaults.source("GRUB_CMDLINE_LINUX+=' c'\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT d\"\n", "/etc/default/grub.d/x.cfg")
    assert defaults.cmdline() == ["a", "b", "c", "d"] and defaults.notes() == []


def test_grub_reader_refuses_a_file_sh_could_not_read():
    with pytest.raises(RdmaopsError, match=r"^/etc/default/grub line 2: a double quote is not closed"):
        GrubDefaults().source('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="quiet\n', "/etc/default/grub")


def pwned_grub(root):
    marker = os.path.join(str(root), "pwned")
    return marker, (
        "GRUB_DEFAULT=0\n"
        "GRUB_DISTRIBUTOR=`touch %s.distributor`\n"
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet $(touch %s)"\n'
        "GRUB_CMDLINE_LINUX=\"$(touch %s.linux) console=ttyS0\"\n"
        "touch %s.command\n" % (marker, marker, marker, marker)
    )


@pytest.mark.parametrize("check", [True, False])
def test_grub_file_with_command_substitution_runs_nothing(tmp_path, check):
    # The old module evaluated the GRUB defaults with sh, check mode included: $(...) ran.
    host = gpudirect_tree(tmp_path, cmdline="BOOT_IMAGE=/vmlinuz ro quiet")
    marker, text = pwned_grub(tmp_path)
    grub_files(tmp_path, text)
    runner = SimRunner()
    config = engine(host, runner, check, iommu="passthrough")
    outcome, plan = execute(config)
    assert not [path for path in os.listdir(str(tmp_path)) if path.startswith("pwned")]
    assert [call[0] for call in runner.calls if call[0] not in ("lspci",)] == ([] if check else ["update-grub"])
    assert outcome["iommu"]["boot_config_before"] == "console=ttyS0 quiet"
    assert outcome["iommu"]["missing_before"] == ["iommu=pt"] and plan.changed
    assert any("$(touch %s)" % marker in warning and "never runs" in warning for warning in config.ctx.warnings)
    dropin = os.path.join(str(tmp_path), "etc/default/grub.d/90-rdmaops-gpudirect.cfg")
    assert os.path.exists(dropin) is (not check)
    if not check:
        assert outcome["iommu"]["boot_config_after"] == "console=ttyS0 quiet iommu=pt"


def test_update_grub_failure_puts_the_dropin_back(tmp_path):
    host = gpudirect_tree(tmp_path, cmdline="BOOT_IMAGE=/vmlinuz ro quiet")
    grub_files(tmp_path, UBUNTU_GRUB)

    class FailingGrub(SimRunner):
        def run(self, argv, check=True):
            if argv[0] == "update-grub":
                from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError
                self.calls.append(list(argv))
                raise CommandError(CommandResult(argv, 1, "", "grub-probe: error: failed to get canonical path of overlay\n"))
            return super(FailingGrub, self).run(argv, check)

    from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError
    with pytest.raises(ApplyError) as err:
        run(host, FailingGrub(), iommu="passthrough")
    assert err.value.details["rolled_back"] == ["write /etc/default/grub.d/90-rdmaops-gpudirect.cfg"]
    assert err.value.applied == []
    assert not os.path.exists(os.path.join(str(tmp_path), "etc/default/grub.d/90-rdmaops-gpudirect.cfg"))


def test_a_unit_or_dropin_we_did_not_write_is_refused_unless_adopted(tmp_path):
    host = gpudirect_tree(tmp_path, cmdline="BOOT_IMAGE=/vmlinuz ro quiet")
    os.makedirs(os.path.dirname(unit_path(tmp_path)))
    with open(unit_path(tmp_path), "w") as handle:
        handle.write("[Service]\nExecStart=/usr/local/bin/site-acs\n")
    runner = SimRunner()
    with pytest.raises(RefusedError, match="adopt"):
        run(host, runner, acs="disable")
    assert not [c for c in runner.calls if c[0] == "setpci"]
    plan, _outcome = run(host, runner, acs="disable", adopt=True)
    with open(unit_path(tmp_path)) as handle:
        assert handle.read().startswith("# Managed by rdmaops.roce (gpudirect_config)")

    grub_files(tmp_path, UBUNTU_GRUB, {"90-rdmaops-gpudirect.cfg": 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT mine=1"\n'})
    with pytest.raises(RefusedError, match="90-rdmaops-gpudirect.cfg exists and was not written by rdmaops.roce"):
        run(host, SimRunner(), iommu="passthrough")
    plan, outcome = run(host, SimRunner(), iommu="passthrough", adopt=True)
    assert outcome["iommu"]["boot_config_after"] == "quiet splash iommu=pt"
