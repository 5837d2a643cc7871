"""Run a snippet as a reader runs it: ``python <snippet>`` in a fresh interpreter, in a scratch
folder, with no ``PYTHONPATH`` of the build's and no pytest variables, so only the installed
``netcl_lite`` is importable (an editable install's root, or another checkout's, on the path is taken off it, the library
excepted: :data:`_PRELUDE`). The build runs build-output snippets this way, and the tests run every page block this
way (``tests/test_docs_blocks.py``).

What a snippet prints must follow from what the execution cache keys on, so every run here (the
build's snippets, its figures and drill notebooks, the tests' page blocks) sees a fixed Python
environment (:func:`reader_env`), not the build's: no ``PYTHON*`` variable of the build's environment
reaches it (``PYTHONOPTIMIZE`` would strip a snippet's asserts and a failing one would be stored as
passed; ``PYTHONIOENCODING``, ``PYTHONINTMAXSTRDIGITS``, ``PYTHONHASHSEED`` and ``PYTHONWARNINGS`` change
what it prints or whether it fails; ``PYTHONSTARTUP``, ``PYTHONINSPECT``, ``PYTHONBREAKPOINT`` and
the rest change how it runs), but for those of :data:`KEPT_PYTHON_VARIABLES`, which say which
interpreter and packages run it, as they do for the build that records their versions. Its text in
and out is UTF-8, strict (:data:`FIXED`), as on a reader's UTF-8 terminal, whatever the build's
locale; each run draws its own hash seed, as a reader's ``python`` does. The terminal's size
(``COLUMNS``, ``LINES``: argparse wraps its help to it) and the colour switches (``FORCE_COLOR``,
``NO_COLOR``) do not reach it either.

Nor do the other settings that change what a run prints or draws and that no cache key holds: the
build user's matplotlib settings (``MATPLOTLIBRC``, ``MPLBACKEND``; each run gets an empty
``MPLCONFIGDIR`` of its own, removed after it, so what one run writes there reaches no other), the
locale and time zone (pinned, :data:`FIXED`: ``LC_ALL=C.UTF-8`` for whatever a run calls that reads
the locale, ``TZ=UTC`` for local times), and the numerical libraries' own switches
(:data:`LEFT_OUT_PREFIXES`: thread counts such as ``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS``
change a reduction's order, hence its last bits; ``OPENBLAS_CORETYPE``, ``NPY_*`` and
``ATEN_CPU_CAPABILITY`` choose other kernels). Those are left out rather than pinned: a run then uses
what the machine offers, as a reader's does, and the machine (its device and cores) is in the key."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: the name a snippet runs under, alone in its scratch folder: the build's snippets and the page blocks
#: the doc tests run (:func:`run_as_snippet`), so that what it prints (argparse's usage, a
#: traceback's file name) does not depend on which ran it
SCRIPT_NAME = "block.py"
#: the ``PYTHON*`` variables that reach a snippet from the build's environment: where the interpreter
#: and its packages are (the packages the execution cache records by version) and where bytecode is
#: kept; every other one is left out (:func:`reader_env`)
KEPT_PYTHON_VARIABLES = frozenset({"PYTHONHOME", "PYTHONPLATLIBDIR", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
                                   "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"})
#: variables that are not ``PYTHON*`` but change what a snippet prints, left out too: the terminal's size
#: (argparse wraps its help to ``COLUMNS``) and the colour switches
LEFT_OUT = frozenset({"COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "MATPLOTLIBRC", "MPLBACKEND", "LANG",
                      "LANGUAGE"})
#: the prefixes of variables left out: the locale's categories (``LC_ALL`` is pinned instead) and the
#: switches of the numerical libraries a run computes with (OpenMP, OpenBLAS, MKL, BLIS, NumPy,
#: numexpr, Accelerate, PyTorch's ATen)
LEFT_OUT_PREFIXES = ("LC_", "OMP_", "KMP_", "GOMP_", "OPENBLAS_", "GOTO_", "MKL_", "BLIS_", "NPY_", "NUMEXPR_",
                     "VECLIB_", "ATEN_")
#: what every snippet runs with, whatever the build's environment says
FIXED = {"PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
#: the largest file a run (and whatever it starts) may write, in bytes: the prelude sets it as the run's
#: ``RLIMIT_FSIZE`` (soft and hard, never raising one the build already has), so a write past it fails
#: at once with ``OSError: File too large`` (Python ignores the signal that would otherwise kill it).
#: The limits on what a build shows (a figure's ``FIGURE_LIMIT``, a notebook cell's, a snippet's
#: printed output) are checked once the run ends; this one keeps a runaway run from filling the disk
#: before that. A run's own files are far smaller (a checkpoint, PoCL's built kernels: a few MiB); the
#: largest file the runs' environment ever writes is a package a reader's venv installs (the tests
#: install the wheel's extras there: torch's ``libtorch_cpu.so`` is 434 MB, a CUDA wheel up to ~0.6 GB).
FILE_LIMIT = 2 << 30
#: the most private writable memory a run (and each process it starts) may map, in bytes: the prelude
#: sets it as the run's ``RLIMIT_DATA`` (soft and hard, never raising one the build already has), so an
#: allocation past it fails at once (``MemoryError``, ``OSError: Cannot allocate memory``) and the run
#: fails, naming its snippet, figure or notebook, before it takes the build machine's memory. Not
#: ``RLIMIT_AS``: that counts address space reserved but never writable (glibc reserves 64 MiB per malloc
#: arena; a GPU driver may reserve ranges the size of its memory), which ``RLIMIT_DATA`` leaves out.
#: Measured on a 2-core machine, every run of a build from an empty cache (``VmPeak``, the peak of all
#: address space, which bounds the peak of what this limit counts; resident ``VmHWM`` in brackets):
#: Chapter 9's training run 877 MiB (469 MiB), its measures 1209 MiB (297 MiB); the build-output snippets
#: at most 1711 MiB (``chapter9/coders.py``, 727 MiB) and 1445 MiB (``chapter9/mixing.py``, 1101 MiB), the
#: others 456 to 634 MiB; the figures 302 to 536 MiB; the drill notebooks' kernels 1493 MiB (516 MiB).
#: Besides the build's runs, ``import torch`` with a matrix product takes 768 MiB, and with 64 threads
#: 2.9 GiB of address space (1.5 GiB of it private writable, 288 MiB resident): each thread a process
#: starts (PoCL's, OpenMP's: one per core) maps a stack and arena space, so the limit grows with the
#: cores, and stays above four times the largest peak measured (1711 MiB here; torch's 64 threads).
DATA_LIMIT = (8 << 30) + (64 << 20) * (os.cpu_count() or 1)
#: how a snippet runs; part of the execution-cache key of what it prints (and, through
#: :func:`site_build.store.context`, of every figure and notebook)
HOW = (f"stdout bytes, decoded as UTF-8 (CR kept), of: python {SCRIPT_NAME}, fresh interpreter, alone in a "
       f"scratch folder, PYTHONPATH only a prelude that leaves the library alone of the repository importable, "
       f"no PYTHON* variable of the build but "
       f"{' '.join(sorted(KEPT_PYTHON_VARIABLES))}, none of {' '.join(sorted(LEFT_OUT))}, none starting "
       f"{' '.join(LEFT_OUT_PREFIXES)}, {' '.join(f'{k}={v}' for k, v in sorted(FIXED.items()))}, "
       f"MPLCONFIGDIR an empty folder of its own for each run (matplotlib's default settings), "
       f"no file written past {FILE_LIMIT} bytes, no private writable memory mapped past {DATA_LIMIT} bytes, "
       f"run by a wrapper that gives it a script's globals and exits 1 on a SystemExit whose nonzero code "
       f"the OS would read as 0 or an uncaught exception")
#: what runs a snippet (``python -c`` this, then the script's path): the script as ``python <script>`` runs
#: it (``__main__``, its ``__file__``, ``sys.argv[0]`` and its folder first on the path), but a
#: ``SystemExit`` whose code is a nonzero int the OS keeps only the low 8 bits of (256, -512: it would
#: read as 0, success) exits 1, saying so on stderr. Any other code exits as Python makes it exit (a
#: string: printed, status 1); an uncaught exception's traceback starts at the script, as it would, and an
#: uncaught ``KeyboardInterrupt`` ends the process by SIGINT once it is finalized (its threads joined,
#: its ``atexit`` handlers run), as Python does. Only ``os._exit`` of such a
#: code escapes it (no exception is raised).
_MAIN = """\
def _run(BaseException=BaseException, SystemExit=SystemExit, SyntaxError=SyntaxError, isinstance=isinstance,
         int=int, type=type, compile=compile, exec=exec, KeyboardInterrupt=KeyboardInterrupt):
    # every name it uses once the script runs is its own (these defaults, the imports below): the script's
    # globals are this module's, and a script may bind ``type`` or ``BaseException`` for itself
    import atexit, builtins, importlib.machinery, os, sys
    interrupted = []

    def end_by_sigint():                                 # registered first, so it runs last of the
        if interrupted:                                  # atexit handlers: after the script's own and
            import signal                                # after its threads were joined, as python
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):  # <script> does
                try:
                    stream.flush()
                except BaseException:
                    pass
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    atexit.register(end_by_sigint)
    script = sys.argv[1]
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    with open(script, "rb") as f:
        source = f.read()
    nul = source.find(b"\\0")
    if nul >= 0:                                         # as python <script> says it: the file and the line
        start = source.rfind(b"\\n", 0, nul) + 1
        error = SyntaxError("source code cannot contain null bytes",
                            (script, source.count(b"\\n", 0, nul) + 1, None,
                             source[start:nul].decode("utf-8", "replace")))
        sys.excepthook(type(error), error, None)
        raise SystemExit(1)
    main = sys.modules["__main__"]                       # this module, as a script's: pickle finds its classes
    names = main.__dict__
    names.clear()                                        # the globals python <script> gives, and no others
    names.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None, __cached__=None,
                 __file__=script, __builtins__=builtins, __annotations__={},
                 __loader__=importlib.machinery.SourceFileLoader("__main__", script))
    try:
        exec(compile(source, script, "exec"), names)
    except SystemExit as stop:
        code = stop.code
        if isinstance(code, int) and code != 0 and code % 256 == 0:
            sys.stderr.write(f"SystemExit({code!r}): an exit status the OS would read as 0 (it keeps the low "
                             f"8 bits); the run failed\\n")
            sys.stderr.flush()
            raise SystemExit(1) from None
        raise
    except BaseException as error:                       # its traceback as python <script> shows it: from the
        tb = error.__traceback__                         # script's own first frame, none of this wrapper's
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        if tb is not None or isinstance(error, SyntaxError):     # one in the script: no frame ran, none shown
            error.__traceback__ = tb
        sys.excepthook(type(error), error, error.__traceback__)
        if type(error) is KeyboardInterrupt:              # as python <script> ends on one (not a subclass):
            interrupted.append(True)                     # finalized, then killed by SIGINT (a shell's 130)
        raise SystemExit(1) from None


_run()
"""


def python_command(script: str | Path, python: str | Path = sys.executable) -> list[str]:
    """The command that runs ``script`` as a snippet runs (:data:`_MAIN`): as ``python <script>`` does,
    but a nonzero ``SystemExit`` code is never read as success."""
    return [str(python), "-c", _MAIN, str(script)]


#: how much of a failing run's stderr an error shows (its end), in bytes
STDERR_TAIL = 4000
#: what each run's interpreter does first, as its ``sitecustomize``: an editable install's ``.pth`` puts
#: the repository's root on every interpreter's path, so that ``site_build``, ``benchmarks`` and ``tests``
#: would be importable from a snippet, a figure or a notebook, reading files no key covers; the root
#: goes from the path, and so does any other checkout of the project (a folder holding ``pyproject.toml``
#: and ``netcl_lite/``: the venv's editable install may point at another clone or worktree than the one
#: building), and the library is then found alone, where the key reads it (``fingerprint.PACKAGE``: before
#: a folder of the same name in site-packages, where the install puts the wheel's data files, and before
#: the other checkout's library). The interpreter's own ``sitecustomize``, if any, runs after it. Its
#: folder leaves the run's path, but ``PYTHONPATH`` (that folder alone) stays in its environment: a Python the
#: run starts (``subprocess``, a ``multiprocessing`` pool under ``spawn`` or ``forkserver``) inherits it and
#: runs the prelude too, where it would otherwise get the editable install's ``.pth`` alone.
_PRELUDE = """\
import importlib.machinery, os, sys
try:
    import resource
    _soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    _cap = {file_limit} if _hard == resource.RLIM_INFINITY else min(_hard, {file_limit})
    resource.setrlimit(resource.RLIMIT_FSIZE, (_cap, _cap))
    _soft, _hard = resource.getrlimit(resource.RLIMIT_DATA)
    _cap = {data_limit} if _hard == resource.RLIM_INFINITY else min(_hard, {data_limit})
    resource.setrlimit(resource.RLIMIT_DATA, (_cap, _cap))
except ImportError:                                     # no resource module (Windows): no file or memory limit
    pass
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_root, _library = {root!r}, {library!r}


def _checkout(entry):
    real = os.path.realpath(entry or os.curdir)
    return real == _root or (os.path.isfile(os.path.join(real, "pyproject.toml"))
                             and os.path.isfile(os.path.join(real, "netcl_lite", "__init__.py")))


if any(_checkout(p) for p in sys.path):
    sys.path[:] = [p for p in sys.path if not _checkout(p)]

    class _LibraryOnly:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return importlib.machinery.PathFinder.find_spec(name, [_library]) if name == "netcl_lite" else None

    sys.meta_path.insert(0, _LibraryOnly)
_theirs = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)    # the interpreter's own
if _theirs is not None and _theirs.loader is not None:
    import importlib.util
    _theirs.loader.exec_module(importlib.util.module_from_spec(_theirs))
"""


def reader_env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment one run of a snippet runs in (see the module's text): this one without
    ``PYTEST*`` variables, any ``PYTHON*`` variable but :data:`KEPT_PYTHON_VARIABLES` (``PYTHONPATH``
    among those left out), the variables of :data:`LEFT_OUT`, those starting with one of
    :data:`LEFT_OUT_PREFIXES` and any variable that starts with one of ``drop``; with :data:`FIXED`,
    ``MPLCONFIGDIR`` a new empty folder and ``PYTHONPATH`` another holding :data:`_PRELUDE` as
    ``sitecustomize`` (which takes its folder off the run's path as it starts, and leaves ``PYTHONPATH`` for the
    Pythons the run starts). Each call makes a folder: give each run its own call.
    :func:`run_python` and :func:`run_bounded` remove it when the run ends (:func:`release`), and
    whatever is left is removed when this process ends."""
    if not isinstance(drop, tuple) or not all(isinstance(p, str) and p for p in drop):
        raise TypeError(f"drop must be a tuple of non-empty variable-name prefixes, got {drop!r}")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", *LEFT_OUT_PREFIXES, *drop)) and k not in LEFT_OUT
           and (not k.startswith("PYTHON") or k in KEPT_PYTHON_VARIABLES)}
    folder = _matplotlib_folder()
    return {**env, **FIXED, "MPLCONFIGDIR": folder, "PYTHONPATH": _mpl_folders[folder]}


#: the MPLCONFIGDIR folders reader_env made that no run has released yet, each with its run's prelude folder
_mpl_folders: dict[str, str] = {}
_mpl_lock = threading.Lock()


def _prelude_folder() -> str:
    """A new folder holding :data:`_PRELUDE` as ``sitecustomize.py``, for one run's ``PYTHONPATH``."""
    from netcl_lite import fingerprint

    from .paths import ROOT

    folder = tempfile.mkdtemp(prefix="netcl-lite-prelude-")
    Path(folder, "sitecustomize.py").write_text(
        _PRELUDE.format(root=os.path.realpath(ROOT), library=os.path.realpath(fingerprint.PACKAGE.parent),
                        file_limit=FILE_LIMIT, data_limit=DATA_LIMIT),
        encoding="utf-8")
    return folder


def _matplotlib_folder() -> str:
    """A new empty folder, for one run's ``MPLCONFIGDIR``: a figure or snippet draws with matplotlib's
    defaults, not with the settings of the build user's folder (``~/.config/matplotlib``,
    ``MPLCONFIGDIR``) nor with a ``matplotlibrc`` an earlier run wrote into its own folder, none of
    which the execution cache keys on. (Each run builds matplotlib's font list anew there: with the
    few fonts a build machine has, about as quick as reading it.)"""
    folder, prelude = tempfile.mkdtemp(prefix="netcl-lite-matplotlib-"), _prelude_folder()
    with _mpl_lock:
        _mpl_folders[folder] = prelude
    return folder


def _stop_strays(env: dict[str, str]) -> None:
    """Kill every process that still runs in ``env`` (one :func:`reader_env` made: its ``MPLCONFIGDIR``
    is the run's own), found by its environment in ``/proc``: what a run started and left behind outside
    its process group, a daemon (fork, ``setsid``, fork) above all, which would run on after the build
    and hold the run's output open. Only a process that replaced its environment as it started another
    program escapes this; where there is no ``/proc``, nothing is done."""
    folder = env.get("MPLCONFIGDIR")
    with _mpl_lock:
        if folder not in _mpl_folders or not os.path.exists("/proc/self/environ"):
            return
    tag, me = b"\0MPLCONFIGDIR=" + os.fsencode(folder) + b"\0", os.getpid()
    for _ in range(200):                        # each round kills what the last one's forked meanwhile
        found = False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                with open(os.path.join(entry.path, "environ"), "rb") as f:
                    held = tag in b"\0" + f.read()
            except OSError:                     # gone, or another user's
                continue
            if held:
                found = True
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if not found:
            return
        time.sleep(0.005)


def release(env: dict[str, str]) -> None:
    """Once its run has ended, kill what it left running (:func:`_stop_strays`) and remove the
    ``MPLCONFIGDIR`` and prelude folders :func:`reader_env` made for ``env`` (nothing for an environment
    that holds another folder or none)."""
    _stop_strays(env)
    folder = env.get("MPLCONFIGDIR")
    with _mpl_lock:
        if folder not in _mpl_folders:
            return
        prelude = _mpl_folders.pop(folder)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(prelude, ignore_errors=True)


def _release_all() -> None:
    with _mpl_lock:
        folders = [f for pair in _mpl_folders.items() for f in pair]
        _mpl_folders.clear()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_release_all)


class SnippetError(RuntimeError):
    """A snippet failed, ran too long, printed too much or printed what is not UTF-8."""


def printed(stdout: bytes, who: str | Path) -> str:
    """What ``who`` (a snippet, a block's file) printed, ``stdout``, as the build reads it (:data:`HOW`):
    decoded as UTF-8, carriage returns kept. Raises :class:`SnippetError` naming ``who`` and the byte
    when it is not UTF-8."""
    try:
        return stdout.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SnippetError(f"{who} printed bytes that are not UTF-8 (at byte {err.start}: "
                           f"{stdout[err.start:err.start + 8]!r}); print text") from None


def run_python(script: str | Path, cwd: str | Path | None = None, timeout: float = 900,
               python: str | Path = sys.executable, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess:
    """``python <script>`` in ``cwd`` (None: a new empty scratch folder, removed afterwards); its
    stdout read as the build reads a snippet's (:func:`printed`: bytes decoded as UTF-8, carriage
    returns kept, :class:`SnippetError` for bytes that are not UTF-8), its stderr decoded with
    U+FFFD for what is not UTF-8; ``python`` is this interpreter unless another install is named,
    and ``env`` is :func:`reader_env` unless given (its ``MPLCONFIGDIR`` folder is removed after the run:
    :func:`release`)."""
    if not isinstance(script, (str, Path)):
        raise TypeError(f"script must be a path, got {type(script).__name__}")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    command = [str(python), str(Path(script).resolve())]          # as errors show it; run by python_command
    env = reader_env() if env is None else env
    # run as the build runs a snippet (run_bounded): once the script ends, what it left running is
    # killed, so a process it left holding its stdout (a daemon) does not keep the run waiting on the
    # pipe until the timeout, to be reported as a run that took too long
    if cwd is not None:
        run = run_bounded(python_command(command[1], python), cwd, env, timeout, 1 << 62, stderr_tail=None)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run = run_bounded(python_command(command[1], python), tmp, env, timeout, 1 << 62, stderr_tail=None)
    if run.stopped == "timeout":
        raise subprocess.TimeoutExpired(command, timeout, run.stdout, run.stderr)
    return subprocess.CompletedProcess(command, run.returncode, printed(run.stdout, script),
                                       run.stderr.decode("utf-8", "replace"))


def run_code(code: str, folder: str | Path, timeout: float = 600, **how) -> subprocess.CompletedProcess:
    """``code`` written to ``folder/``:data:`SCRIPT_NAME` as UTF-8 bytes and run there by
    :func:`run_python` (``how``: its ``python`` and ``env``): a page block as a reader who pasted it
    into a file runs it, under the name and with the stdout the build's runs have."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    script = Path(folder) / SCRIPT_NAME
    script.write_bytes(code.encode("utf-8"))
    return run_python(script, cwd=folder, timeout=timeout, **how)


@dataclass(frozen=True)
class Bounded:
    """What :func:`run_bounded` saw: the exit status (None when it stopped the run), stdout, the
    end of stderr (its last :data:`STDERR_TAIL` bytes unless asked for more) and why it stopped the run (``"limit"``, ``"timeout"``)."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    stopped: str | None


def _exited(pid: int) -> bool:
    """Whether the child ``pid`` has exited, leaving it unreaped (so its process group keeps its id)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def run_bounded(command: list[str], cwd: str | Path, env: dict[str, str], timeout: float,
                limit: int | None, stderr_tail: int | None = STDERR_TAIL) -> Bounded:
    """``command`` in its own process group, stdin empty, for at most ``timeout`` seconds, reading at
    most ``limit`` bytes of stdout (None: stdout is discarded). A run past either limit is stopped at
    once, without reading further; stderr keeps its last ``stderr_tail`` bytes (None: all of it). When the command ends, whatever it left running in its group, or
    elsewhere in ``env`` (:func:`_stop_strays`), is killed too, so nothing it started outlives it or holds
    its output open, and the ``MPLCONFIGDIR``
    folder :func:`reader_env` made for ``env`` is removed (:func:`release`)."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"limit must be a number of bytes (int >= 0) or None, got {limit!r}")
    if stderr_tail is not None and (not isinstance(stderr_tail, int) or isinstance(stderr_tail, bool)
                                    or stderr_tail < 1):
        raise ValueError(f"stderr_tail must be a number of bytes (int >= 1) or None, got {stderr_tail!r}")
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL if limit is None else subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    out, err, over = bytearray(), bytearray(), threading.Event()

    def read_stdout():
        while chunk := proc.stdout.read1(1 << 16):
            out.extend(chunk)
            if len(out) > limit:
                over.set()
                return

    def read_stderr():
        while chunk := proc.stderr.read1(1 << 16):
            err.extend(chunk)
            if stderr_tail is not None:
                del err[:-stderr_tail]

    readers = [threading.Thread(target=read_stderr, daemon=True)]
    if limit is not None:
        readers.append(threading.Thread(target=read_stdout, daemon=True))
    for reader in readers:
        reader.start()
    deadline, stopped = time.monotonic() + timeout, None
    try:
        while not _exited(proc.pid):
            if over.wait(0.02):
                stopped = "limit"
                break
            if time.monotonic() > deadline:
                stopped = "timeout"
                break
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)      # the group id is the unreaped child's own pid
        except (ProcessLookupError, PermissionError):
            pass
        _stop_strays(env)                          # and what left the group, before the readers wait on it
        proc.wait()
        for reader in readers:
            reader.join(timeout=5)      # longer only if a process that left the group holds a pipe
        if not any(reader.is_alive() for reader in readers):   # closing under a reader would wait on it
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        release(env)
    if stopped is None and over.is_set():           # it printed too much, then ended before we looked
        stopped = "limit"
    return Bounded(None if stopped else proc.returncode, bytes(out[:limit]), bytes(err), stopped)


def run_as_snippet(code: bytes, folder: str | Path, timeout: float, limit: int | None = None) -> Bounded:
    """``code`` written to ``folder/``:data:`SCRIPT_NAME` and run there by :func:`run_bounded` (this
    interpreter, the reader's environment, stdout as bytes): how the build runs a build-output snippet
    and the doc test runs a page block whose output the build may show (:data:`HOW`)."""
    script = Path(folder) / SCRIPT_NAME
    script.write_bytes(code)
    return run_bounded(python_command(script), folder, reader_env(), timeout,
                       (1 << 62) if limit is None else limit)


def run_snippet(path: str | Path, limit: int | None = None, timeout: float = 900, code: bytes | None = None) -> str:
    """The stdout of the snippet file ``path``, run by :func:`run_as_snippet` (a fresh interpreter, a
    copy of it alone in a scratch folder, the reader's environment): at most ``timeout``
    seconds and ``limit`` bytes of stdout (None: no limit). Raises :class:`SnippetError` when it fails
    (with the end of its stderr), runs too long, prints too much or prints bytes that are not UTF-8.
    ``code``: the snippet's bytes as already read (those its cache key was made of); None: read them."""
    if code is not None and not isinstance(code, bytes):
        raise TypeError(f"code must be bytes or None, got {type(code).__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        # a copy in the scratch folder, as a page block runs: the snippet's neighbours (which its
        # cache key does not cover) can be neither imported nor read beside it
        run = run_as_snippet(Path(path).read_bytes() if code is None else code, tmp, timeout, limit)
    if run.stopped == "limit":
        raise SnippetError(f"{path} printed more than {limit:,} bytes, the most a build output may "
                           f"show; stopped it there")
    if run.stopped == "timeout":
        raise SnippetError(f"{path} ran longer than {timeout:g} s, the most a snippet may run at build "
                           f"time; stopped it")
    if run.returncode:
        how = f"exit status {run.returncode}" if run.returncode > 0 else f"signal {-run.returncode}"
        raise SnippetError(f"{path} failed at build time ({how}):\n"
                           f"{run.stderr.decode('utf-8', 'replace')}")
    return printed(run.stdout, path)
