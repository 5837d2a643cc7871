"""With no usable OpenCL device, ``nl.device()`` says what to install on the reader's platform.

pyopencl is made to report no platform (the ICD loader's error, or an empty list) and a platform
with no device, while ``sys.platform`` and ``platform.machine()`` name each platform the home page's
Install section covers; the error must name that platform's driver and no other's.
"""

from __future__ import annotations

import platform
import sys

import pyopencl as cl
import pytest

from netcl_lite.core import device as device_mod
from netcl_lite.core.device import DeviceManager, NoDeviceError, install_hint

# (sys.platform, platform.machine()): what the message must say, and what it must not
PLATFORMS = {
    ("linux", "x86_64"): (["pip install 'pyopencl[pocl]'"], ["apt install", "conda"]),
    ("linux", "aarch64"): (["sudo apt install pocl-opencl-icd", "Linux aarch64", "x86_64 only"],
                           ["`pip install 'pyopencl[pocl]'` installs"]),
    ("darwin", "arm64"): (["Apple", "GPU", "conda install -c conda-forge pyopencl pocl"],
                          ["apt install", "`pip install 'pyopencl[pocl]'` installs"]),
    ("win32", "AMD64"): (["graphics driver", "WSL 2"], ["apt install", "conda"]),
}


class _Platform:
    """A pyopencl platform with a name and no usable device."""

    def __init__(self, name: str, error: bool):
        self.name, self.error = name, error

    def get_devices(self):
        if self.error:
            raise cl.RuntimeError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")
        return []


def _loader_finds_nothing():
    raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")


CASES = {
    "no platform (loader error)": (_loader_finds_nothing, "no OpenCL platform found"),
    "no platform (empty list)": (lambda: [], "no OpenCL platform found"),
    "platforms without devices": (lambda: [_Platform("Empty Vendor ", True), _Platform("Other", False)],
                                  "OpenCL platforms found ('Empty Vendor', 'Other'), but none offers a device"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("system, machine", PLATFORMS, ids=[f"{s}-{m}" for s, m in PLATFORMS])
def test_no_device_names_what_to_install_on_this_platform(monkeypatch, system, machine, case):
    get_platforms, opening = CASES[case]
    monkeypatch.setattr(cl, "get_platforms", get_platforms)
    monkeypatch.setattr(sys, "platform", system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    with pytest.raises(NoDeviceError) as raised:
        DeviceManager().default("auto")
    message = str(raised.value)
    assert message.startswith(opening), message
    wanted, unwanted = PLATFORMS[system, machine]
    for text in wanted:
        assert text in message, f"{system}/{machine}, {case}: {text!r} missing from {message!r}"
    for text in unwanted:
        assert text not in message, f"{system}/{machine}, {case}: {text!r} does not belong in {message!r}"
    assert "platforms exist" not in message


def test_a_missing_cpu_device_gives_the_platforms_hint(monkeypatch):
    gpu_only = [d for d in device_mod._all_devices() if not d.type & cl.device_type.CPU]
    monkeypatch.setattr(device_mod, "_all_devices", lambda: gpu_only)
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(NoDeviceError, match="conda install -c conda-forge pyopencl pocl"):
        DeviceManager().default("cpu")


def test_install_hint_reads_this_machine_and_checks_its_arguments():
    assert install_hint() == install_hint(sys.platform, platform.machine())
    assert "x86_64 only" in install_hint("linux", "riscv64") and "riscv64" in install_hint("linux", "riscv64")
    assert "Linux x86_64 only" in install_hint("freebsd14", "amd64")
    with pytest.raises(TypeError, match="system and machine must be strings"):
        install_hint(3, "x86_64")


@pytest.mark.parametrize("doc", ["README.md", "docs/index.md"])
def test_the_install_text_covers_every_platform_with_the_errors_commands(doc):
    """The home page and the README give each platform the command its NoDeviceError gives."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / doc).read_text(encoding="utf-8")
    for row in ("Linux x86_64", "Linux on ARM (aarch64)", "macOS", "Windows"):
        assert f"| {row} |" in text, f"{doc}: no install row for {row}"
    for system, machine in PLATFORMS:
        commands = __import__("re").findall(r"`([^`]*(?:install|conda)[^`]*)`", install_hint(system, machine))
        for command in commands:
            assert command in text, f"{doc}: the {system}/{machine} error says `{command}`; the install text does not"
