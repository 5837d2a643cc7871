"""Pick an OpenCL device: ``manager.default("auto" | "cpu" | "gpu")``.

``"auto"`` takes a GPU when one exists and otherwise the CPU. On Linux x86_64
the PoCL CPU driver inside ``pip install pyopencl[pocl]`` is the device most
readers have; elsewhere it is the system's OpenCL driver (:func:`install_hint`
says what to install on each platform). The environment variable ``NETCL_LITE_DEVICE`` (``auto``, ``cpu`` or
``gpu``) decides what ``"auto"`` means, so a script written with the default
runs on another device without edits.

    >>> import netcl_lite as nl
    >>> dev = nl.device()                # the same object as manager.default()
    >>> dev.kind in ("cpu", "gpu"), dev.queue is nl.device().queue
    (True, True)
"""

from __future__ import annotations

import os
import platform
import re
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pyopencl as cl

from . import compiler_target, forking

KINDS = ("auto", "cpu", "gpu")
ENV_VAR = "NETCL_LITE_DEVICE"

#: what to install for an OpenCL device, by ``sys.platform`` (Linux also by ``platform.machine()``)
_LINUX_X86_64 = ("on Linux x86_64, `pip install 'pyopencl[pocl]'` installs PoCL, an OpenCL driver for "
                 "the CPU, inside pyopencl's wheel (no GPU needed); a GPU vendor's OpenCL driver (ICD) "
                 "adds that GPU")
_LINUX_OTHER = ("PoCL's pip wheel exists for Linux x86_64 only, so on Linux {machine} install your "
                "distribution's PoCL, a CPU driver (Debian and Ubuntu: `sudo apt install "
                "pocl-opencl-icd`), or a GPU vendor's OpenCL driver (ICD)")
_MACOS = ("macOS has OpenCL built in (Apple's driver runs on the GPU); for a CPU device, or where "
          "Apple's driver is missing, use a conda-forge environment: `conda install -c conda-forge "
          "pyopencl pocl`, then pip install netcl_lite into it")
_WINDOWS = ("on Windows, OpenCL comes with the GPU's driver: install NVIDIA's, AMD's or Intel's "
            "graphics driver (for an Intel CPU alone, Intel's CPU Runtime for OpenCL Applications); "
            "PoCL has no Windows wheel, and under WSL 2 the Linux x86_64 route, `pip install "
            "'pyopencl[pocl]'`, works")


def install_hint(system: str | None = None, machine: str | None = None) -> str:
    """What to install for an OpenCL device on a platform: ``system`` as ``sys.platform`` names it,
    ``machine`` as ``platform.machine()`` does (both those of this machine when None)."""
    system = sys.platform if system is None else system
    machine = platform.machine() if machine is None else machine
    if not isinstance(system, str) or not isinstance(machine, str):
        raise TypeError("system and machine must be strings (sys.platform, platform.machine())")
    if system.startswith("linux"):
        if machine.lower() in ("x86_64", "amd64"):
            return _LINUX_X86_64
        return _LINUX_OTHER.format(machine=machine or "(unknown machine)")
    if system == "darwin":
        return _MACOS
    if system in ("win32", "cygwin"):
        return _WINDOWS
    return ("install an OpenCL driver for this system (PoCL for the CPU, or a GPU vendor's driver); "
            "pyopencl's `pocl` extra brings one on Linux x86_64 only")


class NoDeviceError(RuntimeError):
    """No OpenCL device of the requested kind exists on this machine."""


@dataclass(frozen=True)
class Device:
    """One OpenCL device with its own context and in-order command queue."""

    cl_device: cl.Device
    context: cl.Context
    queue: cl.CommandQueue
    kind: str  # "cpu" or "gpu"

    @property
    def name(self) -> str:
        """The driver's name for the device, e.g. ``'pthread-AMD EPYC 9B14'``."""
        return self.cl_device.name.strip()

    @property
    def compiler_cpu(self) -> str | None:
        """The CPU PoCL's compiler targets on a PoCL CPU device (e.g. ``'znver3'``,
        ``'skylake-avx512'``; see :mod:`netcl_lite.core.compiler_target`), None elsewhere."""
        return compiler_target.target_of(self.cl_device)

    @property
    def platform(self) -> str:
        """The OpenCL platform (driver), e.g. ``'Portable Computing Language'``."""
        return self.cl_device.platform.name.strip()

    def __repr__(self) -> str:
        return f"Device({self.name!r}, kind={self.kind!r}, platform={self.platform!r})"


def _kind_of(device: cl.Device) -> str | None:
    if device.type & cl.device_type.GPU:
        return "gpu"
    if device.type & cl.device_type.CPU:
        return "cpu"
    return None  # accelerators and custom devices are not chosen automatically


#: PoCL's CPU driver pins worker thread i to CPU i when this is set before it starts its threads
AFFINITY_VAR = "POCL_AFFINITY"


#: the variables that set how many worker threads PoCL's CPU driver starts, in the PoCL versions
#: from 3.0 on (the driver reads each with C's ``atoi``; which wins differs between versions)
WORKER_COUNT_VARS = ("POCL_MAX_PTHREAD_COUNT", "POCL_PTHREAD_MIN_THREADS", "POCL_CPU_MAX_CU_COUNT",
                     "POCL_CPU_MIN_CU_COUNT", "POCL_MAX_COMPUTE_UNITS")


def _worker_counts_fit(cpus: int) -> bool:
    """Whether every worker-count variable that is set holds a whole number from 0 to ``cpus``
    (empty reads as 0, PoCL's default), written in ASCII digits: then PoCL starts at most ``cpus``
    workers, each of which pinning can put on a CPU of its own. A sign (a negative count PoCL
    takes as unsigned: a huge one) or any other text fits nothing."""
    for name in WORKER_COUNT_VARS:
        value = os.environ.get(name)
        if value is None:
            continue
        digits = value.strip() or "0"
        if not (digits.isascii() and digits.isdigit()) or int(digits) > cpus:
            return False
    return True


def _as_pocl_reads(text: str) -> int:
    """``text`` as PoCL reads a worker count: C's ``atoi`` (glibc's ``(int) strtol``: white space, a sign
    and the digits that follow, clamped to a 64-bit long, then cut to a 32-bit int)."""
    match = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]*)", text)
    value = int(match[2]) if match[2] else 0
    value = max(-(1 << 63), min(-value if match[1] == "-" else value, (1 << 63) - 1))
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


#: the most workers a worker-count variable may ask PoCL for (:func:`worker_count_problem`): PoCL
#: starts every one as its device starts and aborts the process when the system refuses a thread
#: (at ~32,000 on Linux's default ``vm.max_map_count``, earlier under a small ``ulimit -u``); 4,096 is
#: far past any CPU count this library meets and still far from that limit.
MAX_POCL_WORKERS = 4096


def worker_count_problem() -> str | None:
    """Why a worker-count variable (:data:`WORKER_COUNT_VARS`) would kill the process as PoCL starts,
    or None: one PoCL reads as negative (``-1``, or ``4294967295``, which its ``atoi`` wraps to -1) is
    taken by its CPU driver as a huge unsigned count, and it crashes starting that many threads, with
    no message, before any Python code can catch it; one above :data:`MAX_POCL_WORKERS` may exhaust the
    threads the system allows, which PoCL answers by aborting the process."""
    for name in WORKER_COUNT_VARS:
        value = os.environ.get(name)
        if value is None:
            continue
        read = _as_pocl_reads(value)
        if read < 0:
            return (f"{name}={value!r} is a worker count PoCL reads as {read}, a negative one, "
                    f"which its CPU driver takes as a huge unsigned count: the process would crash starting "
                    f"that many threads. Set a whole number of threads (0: PoCL's default, one per CPU) or "
                    f"unset it")
        if read > MAX_POCL_WORKERS:
            return (f"{name}={value!r} asks PoCL for {read:,} worker threads, more than the {MAX_POCL_WORKERS:,} "
                    f"this library allows: PoCL starts them all at once and aborts the process when the "
                    f"system refuses one. Set a whole number of threads up to {MAX_POCL_WORKERS:,} (0: PoCL's "
                    f"default, one per CPU) or unset it")
    return None


def pin_pocl_workers() -> bool:
    """Ask PoCL's CPU driver to pin its worker threads, one per CPU, unless the caller chose.

    Pinned, each worker keeps its work-groups' data in its own core's caches between
    launches, and two workers never share a core: products, the decoder block and a training
    step run faster (benchmarks/results/tried.md, "PoCL's workers pinned to cores"). The cost
    falls on work the host thread paces, many small launches each waited for: a worker woken on
    the host thread's core preempts it, so an uncached forward, cached decoding and loops of
    tiny NumPy-in-and-out ops run slower; :func:`let_host_thread_lead`, which the
    device lookup runs on the workers this pinned, takes that cost back. PoCL pins worker i to CPU
    i, so this is set only when the process may run on every CPU (``taskset`` or a cgroup
    cpuset that leaves some out would make that call fail), and only when ``POCL_AFFINITY``
    is unset: ``POCL_AFFINITY=0`` keeps the threads free. It has effect only if it runs before
    PoCL starts, which the first device lookup in a process does. Returns whether it set it.

    Nor is it set when a worker-count variable (:data:`WORKER_COUNT_VARS`) asks for more workers
    than there are CPUs, or holds anything but a whole number: PoCL would pin a worker to a CPU
    that does not exist and abort the process. The caller's count stands (it is a choice, part of
    the execution cache's key) and the workers run unpinned: pinning is a matter of speed only.
    """
    global _pinned_by_us
    if AFFINITY_VAR in os.environ or not hasattr(os, "sched_getaffinity"):
        return False
    cpus = os.cpu_count() or 1
    if os.sched_getaffinity(0) != set(range(cpus)) or not _worker_counts_fit(cpus):
        return False
    os.environ[AFFINITY_VAR] = "1"
    _pinned_by_us = True
    return True


_pinned_by_us = False


def _thread_ids() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:                          # not Linux: no per-thread view, nothing to adjust
        return set()


def let_host_thread_lead(new_threads: set[int]) -> int:
    """Put PoCL's pinned worker threads (those of ``new_threads`` allowed on exactly one CPU) under
    ``SCHED_BATCH``, so that waking one no longer preempts the host thread on its core.

    Pinning has a cost where the host thread paces the work: each launch into an idle queue woke
    the worker on the host thread's core, which took the core at once, and the host's Python
    waited for the kernel before it could queue the next. A batch thread runs as soon as a core
    is free but does not preempt on wake-up; while the host runs Python, the other worker takes
    the work-groups (benchmarks/results/tried.md, "Pinned workers under `SCHED_BATCH`"). Done
    only when this library pinned the workers
    (:func:`pin_pocl_workers`): a caller who set ``POCL_AFFINITY`` keeps the threads as they
    are. Unprivileged processes may switch their own threads between the normal and batch
    policies. Returns how many threads it changed.
    """
    if not hasattr(os, "sched_setscheduler"):
        return 0
    changed = 0
    for tid in new_threads:
        try:
            if len(os.sched_getaffinity(tid)) == 1 and os.sched_getscheduler(tid) == os.SCHED_OTHER:
                os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
                changed += 1
        except OSError:                      # the thread ended, or the system refuses: leave it
            continue
    return changed


def _all_devices() -> list[cl.Device]:
    given = {k: v for k, v in os.environ.items() if k.startswith("POCL_")}    # the user's, not the pinning's
    if (problem := worker_count_problem()) is not None:    # PoCL would crash, past any message
        raise ValueError(problem)
    pin_pocl_workers()
    keep_pocl_cache_absolute()
    try:
        platforms = forking.platforms()     # notes that this process started OpenCL
    except cl.LogicError as err:  # the ICD loader found no platform at all
        raise NoDeviceError(f"no OpenCL platform found ({err}); {install_hint()}") from None
    if not platforms:
        raise NoDeviceError(f"no OpenCL platform found; {install_hint()}")
    devices = []
    for found in platforms:
        try:
            devices.extend(found.get_devices())
        except cl.Error:
            continue  # a platform with no usable device
    if not devices:
        names = ", ".join(repr(p.name.strip()) for p in platforms)
        raise NoDeviceError(f"OpenCL platforms found ({names}), but none offers a device; {_driver_settings(given)}"
                            f"{install_hint()}")
    return devices


def keep_pocl_cache_absolute() -> bool:
    """Set ``POCL_CACHE_DIR`` to ``~/.cache/pocl`` when ``XDG_CACHE_HOME`` is a relative path and
    ``POCL_CACHE_DIR`` is unset; return whether it set it. A relative ``POCL_CACHE_DIR`` is a
    ``ValueError`` naming it.

    The XDG base-directory rules say a relative ``XDG_CACHE_HOME`` is invalid and to be ignored, as
    this library's own cache ignores it (:func:`netcl_lite.fingerprint.user_cache_folder`); PoCL takes
    it as it is, and would make its kernel cache inside whatever folder each process runs in. Like
    :func:`pin_pocl_workers`, it has effect only before PoCL starts, which the first platform query
    in a process does; the device lookup runs it first. A home folder that is no absolute path
    (``HOME=.``) is left to PoCL: there is no better folder to name.
    """
    global _cache_dir_by_us
    given = os.environ.get("POCL_CACHE_DIR", "")
    if given and not os.path.isabs(given):
        # taken as it is, it makes a kernel cache in whatever folder each process runs in (as a relative
        # NETCL_LITE_CACHE would, which the library refuses too)
        raise ValueError(f"POCL_CACHE_DIR={given!r} is a relative path: PoCL would keep its kernel cache in "
                         f"whatever folder each process runs in; set it to an absolute path, or unset it")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if given or not xdg or os.path.isabs(xdg):
        return False
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return False
    _cache_dir_by_us = os.environ["POCL_CACHE_DIR"] = os.path.join(home, ".cache", "pocl")
    return True


_cache_dir_by_us: str | None = None


def pocl_cache_folder() -> tuple[Path, str]:
    """The folder where PoCL's CPU driver keeps the kernels it builds, and the setting that places it:
    ``POCL_CACHE_DIR``, else ``XDG_CACHE_HOME/pocl`` when that is an absolute path (a relative one is
    ignored: :func:`keep_pocl_cache_absolute`), else ``~/.cache/pocl``."""
    if os.environ.get("POCL_CACHE_DIR"):
        set_by_us = os.environ["POCL_CACHE_DIR"] == _cache_dir_by_us
        return Path(os.environ["POCL_CACHE_DIR"]), "your home folder" if set_by_us else "POCL_CACHE_DIR"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "pocl", "XDG_CACHE_HOME"
    return Path.home() / ".cache" / "pocl", "your home folder"


def unmakeable_folder(folder: str | os.PathLike) -> str | None:
    """Why ``folder`` cannot be a folder (a file where it or a folder above it should be, no
    permission), or None: it is one, or can be made (nothing is made here)."""
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (str or os.PathLike), got {type(folder).__name__}")
    folder = at = Path(folder)
    while True:
        try:
            st = at.stat()
        except FileNotFoundError:
            if at.parent == at:
                return None
            at = at.parent
            continue
        except OSError as exc:
            return f"{at}: {exc.strerror}"
        if not stat.S_ISDIR(st.st_mode):
            return f"{at} is not a folder"
        if at != folder and not os.access(at, os.W_OK | os.X_OK):
            return f"{at} takes no new folder (no permission)"
        return None


def _driver_settings(given: dict[str, str]) -> str:
    """For a message saying no device started: the PoCL settings the environment ``given`` holds,
    which can keep its device from starting (a POCL_CACHE_DIR it cannot make, say), and the kernel
    cache's folder when that cannot be made where ``XDG_CACHE_HOME`` or the home folder puts it, or ""."""
    said = ""
    if "POCL_CACHE_DIR" not in given:
        folder, setting = pocl_cache_folder()
        if (why := unmakeable_folder(folder)) is not None:
            by = f"XDG_CACHE_HOME={os.environ.get('XDG_CACHE_HOME')!r}" if setting == "XDG_CACHE_HOME" else setting
            said = (f"PoCL keeps its kernels in {folder} (from {by}), which cannot be made ({why}): set "
                    f"XDG_CACHE_HOME or POCL_CACHE_DIR to a folder you can write; else ")
    pocl = sorted(f"{k}={v!r}" for k, v in given.items())
    if not pocl:
        return said
    shown = ", ".join(pocl[:6]) + (", ..." if len(pocl) > 6 else "")
    return (said + f"PoCL's settings in the environment ({shown}) can keep its device from starting: unset them "
            f"to try; else ")


class OpenCLCacheError(NoDeviceError):
    """pyopencl's cache of kernel launchers (kept by pytools under ``XDG_CACHE_HOME``) cannot be used:
    its folder cannot be made, or its database is damaged. Raised as the device is made, naming the
    folder and what to do, instead of a traceback at the first kernel launch."""


def _launcher_cache_problem() -> str | None:
    """Import pyopencl's kernel-launcher module, which opens its on-disk cache as it loads; why that
    cache cannot be used, or None. The half-made cache object it leaves when it fails is collected
    here, its complaint while being collected kept quiet (it is this same failure)."""
    import gc
    import sqlite3
    import sys

    if "pyopencl.invoker" in sys.modules or getattr(cl, "_PYOPENCL_NO_CACHE", False):
        return None
    problem = None
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        try:
            import pyopencl.invoker  # noqa: F401
        except (OSError, sqlite3.Error) as exc:
            import platformdirs

            folder = platformdirs.user_cache_dir("pytools", "pytools")
            by = (f" (from XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']!r})" if os.environ.get("XDG_CACHE_HOME")
                  else "")
            if isinstance(exc, OSError):
                problem = (f"pyopencl's kernel-launcher cache in {folder}{by} cannot be made "
                           f"({exc.strerror or exc}): set XDG_CACHE_HOME to a folder you can write")
            else:
                problem = (f"pyopencl's kernel-launcher cache in {folder}{by} holds a damaged database ({exc}): "
                           f"remove its pdict-*.sqlite files, or set XDG_CACHE_HOME to another folder")
            sys.modules.pop("pyopencl.invoker", None)
    finally:
        gc.collect()
        sys.unraisablehook = hook
    return problem


def resolve_kind(kind: str) -> str:
    """Validate ``kind`` and apply ``NETCL_LITE_DEVICE`` to ``"auto"``."""
    if not isinstance(kind, str):
        raise TypeError(f"kind must be one of {KINDS}, got {type(kind).__name__}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "auto":
        env = os.environ.get(ENV_VAR, "").strip().lower()
        if env and env not in KINDS:
            raise ValueError(f"{ENV_VAR} must be one of {KINDS}, got {env!r}")
        kind = env or "auto"
    return kind


class DeviceManager:
    """Creates each device's context and queue once and hands out the same one.

    Creation holds a lock: threads that ask for a device together for the first time all get
    the one device the first of them made (PoCL's compiler target is retargeted once, and
    no thread looks for the target after another has replaced it)."""

    def __init__(self) -> None:
        self._cache: dict[str, Device] = {}
        self._lock = threading.Lock()

    def default(self, kind: str = "auto") -> Device:
        """The device for ``kind`` (``"auto"``, ``"cpu"`` or ``"gpu"``).

        Raises ``NoDeviceError`` saying what is missing and what to install on this
        platform (:func:`install_hint`) when no device of that kind exists, and ``ValueError``
        naming a worker-count variable on which PoCL would crash as it starts
        (:func:`worker_count_problem`). In a child forked after this process started OpenCL, raises
        ``RuntimeError`` saying so (:mod:`netcl_lite.core.forking`): neither the parent's device nor a
        new one would run a command there.
        """
        forking.check()
        asked, kind = kind, resolve_kind(kind)
        found = self._cache.get(kind)
        if found is not None:                 # made already: no lock on the common path
            return found
        with self._lock:
            if kind not in self._cache:
                self._cache[kind] = self._create(kind, from_env=asked != kind)
            return self._cache[kind]

    def _create(self, kind: str, from_env: bool = False) -> Device:
        threads_before = _thread_ids()
        by_kind: dict[str, list[cl.Device]] = {"cpu": [], "gpu": []}
        for device in _all_devices():
            k = _kind_of(device)
            if k:
                by_kind[k].append(device)
        order = ["gpu", "cpu"] if kind == "auto" else [kind]
        for k in order:
            if by_kind[k]:
                chosen = by_kind[k][0]
                compiler_target.retarget(chosen)   # before anything is built (a no-op on most CPUs)
                context = cl.Context([chosen])
                # Profiling timestamps cost nothing measurable on PoCL and let profile_kernels() time kernels.
                queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
                if (problem := _launcher_cache_problem()) is not None:
                    raise OpenCLCacheError(problem)
                if _pinned_by_us:         # PoCL has started its workers by now: the threads that are new
                    let_host_thread_lead(_thread_ids() - threads_before)
                return Device(chosen, context, queue, k)
        found = ", ".join(d.name.strip() for ds in by_kind.values() for d in ds) or "none"
        raise NoDeviceError(
            f"no OpenCL {kind.upper() if kind != 'auto' else 'CPU or GPU'} device found "
            f"(devices seen: {found}); "
            + (install_hint() if kind != "gpu" else
               f"{ENV_VAR}={os.environ.get(ENV_VAR, '').strip()!r} asks for one: set it to 'cpu' or 'auto' (or unset "
               "it), or install a GPU's OpenCL driver" if from_env else
               "use kind='cpu' or 'auto', or install a GPU's OpenCL driver")
        )


manager = DeviceManager()


def device(kind: str = "auto") -> Device:
    """The device for ``kind`` (``"auto"``, ``"cpu"`` or ``"gpu"``): ``manager.default(kind)``."""
    return manager.default(kind)


def synchronize(kind: str = "auto") -> None:
    """Wait for everything queued on the device and raise what its kernels reported
    (what copying a value to the host does anyway)."""
    from .stream import sync  # noqa: PLC0415

    sync(device(kind).queue)
