"""The CPU that PoCL's kernel compiler targets, chosen here where PoCL cannot name it.

PoCL's CPU driver compiles every kernel with ``-target-cpu <name>``, the name its own LLVM
gives the host processor. PoCL 3.0 (what ``pip install pyopencl[pocl]`` brings) carries LLVM
14, which knows no CPU newer than 2021: on an AMD Zen 5 (family 26, 2024) it answers
``generic``, a name LLVM 14's x86 front end refuses, so *every* kernel build fails with
``error: unknown target CPU 'generic'``. PoCL 3.0 offers no setting to change the name.

This module gives the driver a name it can compile for, the one PoCL's own builtin library
was compiled for on this host: PoCL ships its math library in variants (SSE2 … AVX2,
AVX-512) and picks one at run time from the CPU's features; variant ``avx512`` was built for
``skylake-avx512``, ``avx2`` for ``haswell``, and so on. Compiling the kernels for that same
CPU lets every builtin inline, and uses exactly the instruction sets the host has. On a Zen 5
with AVX-512 that is ``skylake-avx512``: the kernels get 32 registers of 16 floats.

PoCL keeps the name in its device structure, next to the target triple, and reads it at every
build. :func:`retarget` finds that field by its two values (the triple, then the CPU name) and
points it at the new name, once per process, before anything is built. It does so only

* for PoCL's x86-64 CPU device, and only where PoCL's name is ``generic`` (the builds would
  all fail) or where ``NETCL_LITE_POCL_CPU`` asks for another of the variants' CPUs;
* when exactly one field in the structure holds that pair of values;
* and it keeps the change only if a probe program then builds.

``NETCL_LITE_POCL_CPU`` (for example ``haswell`` to compare 8-float vectors with 16 on an
AVX-512 machine) must name a CPU whose instruction sets this host has; anything else is
refused with the list of the names that are allowed here.

    >>> from netcl_lite.core import compiler_target
    >>> compiler_target.variant_cpus()[-1]        # the CPUs of PoCL's builtin-library variants
    'skylake-avx512'
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading

import pyopencl as cl

ENV_VAR = "NETCL_LITE_POCL_CPU"

#: PoCL 3.0's builtin-library variants for x86-64, in PoCL's order of preference (its
#: ``getX86KernelLibName``): the CPU each was compiled for and the instruction sets (Linux
#: ``/proc/cpuinfo`` flag names) PoCL requires before it picks it. The last that the host
#: satisfies is PoCL's choice, and ours.
_VARIANTS: tuple[tuple[str, frozenset[str]], ...] = (
    ("athlon64", frozenset({"sse2"})),
    ("core2", frozenset({"ssse3", "cx16"})),
    ("penryn", frozenset({"sse4_1", "cx16"})),
    ("sandybridge", frozenset({"avx", "cx16", "popcnt"})),
    ("ivybridge", frozenset({"avx", "cx16", "popcnt", "f16c"})),
    ("bdver1", frozenset({"avx", "cx16", "popcnt", "xop", "fma4"})),
    ("haswell", frozenset({"avx", "avx2", "cx16", "popcnt", "abm", "f16c", "fma", "bmi1", "bmi2"})),
    ("skylake-avx512", frozenset({"avx512f"})),
)

#: variants PoCL 3.0's LLVM 14 cannot build every kernel for: without AVX, building
#: flash_attention.cl crashes the compiler (SIGSEGV, then a corrupted kernel cache) though a small
#: probe and matmul.cl build; sandybridge, the oldest variant with AVX, builds them all
#: (benchmarks/results/tried.md, "Compiler variants without AVX"). They are never chosen, and
#: naming one in NETCL_LITE_POCL_CPU is refused.
_UNBUILDABLE = frozenset({"athlon64", "core2", "penryn"})

#: what the extra CPU features of ``skylake-avx512`` need beyond ``avx512f`` to be safe to use
#: (PoCL picks the variant on ``avx512f`` alone; the compiler may use all of these)
_AVX512_REST = frozenset({"avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma", "bmi1", "bmi2",
                          "f16c", "popcnt", "abm", "movbe"})

#: the name PoCL was given, kept alive for the life of the process (PoCL holds a raw pointer to it)
_installed: dict[int, ctypes.Array] = {}
#: held while a device is retargeted: a second thread waits, then finds the device in ``_installed``
#: (it would otherwise look for PoCL's own name in a field that the first has already replaced)
_retarget_lock = threading.Lock()


class CompilerTargetError(RuntimeError):
    """PoCL's compiler target could not be set to a CPU this host can run."""


def variant_cpus() -> list[str]:
    """The CPUs PoCL 3.0's x86-64 builtin-library variants were compiled for, oldest first."""
    return [cpu for cpu, _ in _VARIANTS]


def host_flags() -> frozenset[str]:
    """The host CPU's instruction-set flags as Linux names them (empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def allowed_cpus(flags: frozenset[str]) -> list[str]:
    """The variant CPUs whose instruction sets ``flags`` include and for which every kernel builds
    (not :data:`_UNBUILDABLE`), oldest first."""
    allowed = []
    for cpu, needs in _VARIANTS:
        if cpu in _UNBUILDABLE:
            continue
        if cpu == "skylake-avx512":
            needs = needs | _AVX512_REST
        if needs <= flags:
            allowed.append(cpu)
    return allowed


#: PoCL's build string for a host CPU device on Linux: ``<driver>-<target triple>-<cpu>``, where the
#: triple (``x86_64-unknown-linux-gnu``, ``x86_64-linux-gnu``, ``x86_64-redhat-linux`` ...) and
#: the CPU (``skylake-avx512``) may both hold hyphens
_HSTR = re.compile(r"^([^-]+)-(\w+(?:-[^-]+)?-linux(?:-(?:gnu|musl|android)\w*)?)-(.+)$")


def _hstr(device: cl.Device) -> tuple[str, str, str] | None:
    """(driver, target triple, CPU) from a PoCL CPU device's version; None for other devices.
    Outside Linux the triple is everything between the first and the last hyphen."""
    if not device.type & cl.device_type.CPU or "PoCL" not in device.version or "HSTR:" not in device.version:
        return None
    return parse_hstr(device.version.split("HSTR:", 1)[1].strip())


def parse_hstr(hstr: str) -> tuple[str, str, str] | None:
    """Split PoCL's build string into (driver, target triple, CPU).

    >>> parse_hstr("pthread-x86_64-unknown-linux-gnu-skylake-avx512")
    ('pthread', 'x86_64-unknown-linux-gnu', 'skylake-avx512')
    """
    match = _HSTR.match(hstr)
    if match:
        return match.group(1), match.group(2), match.group(3)
    parts = hstr.split("-")
    return (parts[0], "-".join(parts[1:-1]), parts[-1]) if len(parts) >= 3 else None


def pocl_cpu_name(device: cl.Device) -> str | None:
    """The CPU name a PoCL CPU device compiles for, read from its version's ``HSTR`` (for example
    ``'znver3'``, ``'rocketlake'`` or ``'generic'``), or None when the device is not PoCL's CPU."""
    hstr = _hstr(device)
    return hstr[2] if hstr else None


def _readable_ranges() -> list[tuple[int, int]]:
    ranges = []
    with open("/proc/self/maps", encoding="ascii") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms.startswith("r"):
                lo, hi = (int(x, 16) for x in span.split("-"))
                ranges.append((lo, hi))
    return ranges


def _string_at(address: int | None, ranges: list[tuple[int, int]], size: int = 32) -> bytes | None:
    if not address or not any(lo <= address and address + size <= hi for lo, hi in ranges):
        return None
    return ctypes.string_at(address, size).split(b"\0", 1)[0]


#: how far into PoCL's device structure to look (the field sits ~600 bytes in, in PoCL 3.0)
_SCAN_BYTES = 4096


def _cpu_field(device: cl.Device, triple: str, current: str) -> int:
    """The address of the pointer in PoCL's device structure that names the compile target: the
    one field that points at the name ``current`` right after a field that points at ``triple``."""
    ranges = _readable_ranges()
    base = device.int_ptr
    if not any(lo <= base and base + _SCAN_BYTES <= hi for lo, hi in ranges):
        raise CompilerTargetError("PoCL's device structure is not readable here")
    width = ctypes.sizeof(ctypes.c_void_p)
    hits = []
    for offset in range(0, _SCAN_BYTES - 2 * width, width):
        triple_at = ctypes.c_void_p.from_address(base + offset).value
        if _string_at(triple_at, ranges) != triple.encode():
            continue
        cpu = ctypes.c_void_p.from_address(base + offset + width).value
        if _string_at(cpu, ranges) == current.encode():
            hits.append(base + offset + width)
    if len(hits) != 1:
        raise CompilerTargetError(
            f"found {len(hits)} places in PoCL's device structure naming the target "
            f"{triple}/{current}; expected exactly one (a PoCL build this library does not know)")
    return hits[0]


_PROBE = "__kernel void probe(__global float *x) { x[get_global_id(0)] = exp(x[get_global_id(0)]); }"


def _builds(device: cl.Device) -> bool:
    try:
        cl.Program(cl.Context([device]), _PROBE).build()
    except cl.RuntimeError:
        return False
    return True


def choose_cpu(current: str, wanted: str, flags: frozenset[str]) -> str | None:
    """The CPU to compile for, given PoCL's own name ``current``, the value ``wanted`` of
    ``NETCL_LITE_POCL_CPU`` (``""`` when unset) and the host's ``flags``; None to keep PoCL's.

    >>> choose_cpu("generic", "", frozenset({"sse2", "avx", "cx16", "popcnt"}))
    'sandybridge'
    >>> choose_cpu("znver3", "", frozenset({"sse2"})) is None     # PoCL named the CPU itself
    True
    """
    if not wanted:
        if current != "generic":
            return None
        allowed = allowed_cpus(flags)
        if not allowed:
            raise CompilerTargetError(
                "PoCL's LLVM does not know this CPU (it names it 'generic', which it cannot compile for), "
                "and either its instruction sets could not be read from /proc/cpuinfo or it lacks AVX, "
                f"without which PoCL 3.0 cannot build every kernel; set {ENV_VAR} to one of "
                f"{[c for c in variant_cpus() if c not in _UNBUILDABLE]} that this CPU supports")
        return allowed[-1]
    allowed = allowed_cpus(flags)
    if wanted in _UNBUILDABLE:
        raise ValueError(
            f"{ENV_VAR}={wanted!r} is refused: PoCL 3.0's compiler crashes building flash_attention.cl for "
            f"CPUs without AVX; use one of {allowed} (the CPUs for which every kernel builds on this host), "
            f"or unset it to keep PoCL's own choice ({current!r})")
    if wanted not in allowed:
        raise ValueError(
            f"{ENV_VAR}={wanted!r} is not a CPU PoCL can compile for on this host; use one of "
            f"{allowed} (the CPUs of PoCL's builtin libraries whose instruction sets this CPU has), "
            f"or unset it to keep PoCL's own choice ({current!r})")
    return None if wanted == current else wanted


def retarget(device: cl.Device) -> str | None:
    """Make PoCL compile for a CPU it can build for and this host can run; see the module text.

    Returns the CPU name this set, or None when PoCL's own choice stands (not PoCL's x86-64 CPU
    device, PoCL named the CPU itself and ``NETCL_LITE_POCL_CPU`` is unset, or already done).
    Raises :class:`CompilerTargetError` when PoCL names no usable CPU and none can be set, and
    ``ValueError`` when ``NETCL_LITE_POCL_CPU`` names a CPU that is not allowed on this host.
    Threads may call it together: one retargets, the others wait and return None.
    """
    with _retarget_lock:
        return _retarget(device)


def _retarget(device: cl.Device) -> str | None:
    if device.int_ptr in _installed:
        return None
    hstr = _hstr(device)
    if hstr is None:
        return None
    _, triple, current = hstr
    wanted = os.environ.get(ENV_VAR, "").strip()
    if not (sys.platform.startswith("linux") and triple.startswith("x86_64")):
        if wanted:
            raise ValueError(f"{ENV_VAR} applies to PoCL's x86-64 CPU driver on Linux; this PoCL "
                             f"compiles for {triple} on {sys.platform}: unset it")
        return None
    choice = choose_cpu(current, wanted, host_flags())
    if choice is None:
        return None
    field = _cpu_field(device, triple, current)
    name = ctypes.create_string_buffer(choice.encode())
    pointer = ctypes.c_void_p.from_address(field)
    previous = pointer.value
    pointer.value = ctypes.addressof(name)
    if not _builds(device):
        pointer.value = previous
        raise CompilerTargetError(f"PoCL could not build a probe kernel for target CPU {choice!r} either")
    _installed[device.int_ptr] = name
    return choice


def target_of(device: cl.Device) -> str | None:
    """The CPU the kernels are compiled for on ``device``: the name :func:`retarget` set, else
    PoCL's own (None for a device that is not PoCL's CPU driver)."""
    name = _installed.get(device.int_ptr)
    return name.value.decode() if name is not None else pocl_cpu_name(device)


def build_option(device: cl.Device) -> tuple[str, ...]:
    """A define naming a target that :func:`retarget` set, for every build's options: PoCL's and
    PyOpenCL's binary caches key on the options but not on the target, so without it a kernel
    cached for one target would be served for another."""
    name = _installed.get(device.int_ptr)
    if name is None:
        return ()
    return (f"-DNETCL_LITE_TARGET_CPU_{name.value.decode().replace('-', '_')}",)
