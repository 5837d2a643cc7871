"""Build ``kernels/*.cl`` once per context and hand out reusable ``cl.Kernel`` objects.

Reading ``program.name`` in PyOpenCL creates a new kernel object every time
(and warns with ``RepeatedKernelRetrieval``); this loader creates each kernel
once per (context, file, build options) and returns the same object after that.
A compile failure raises ``KernelBuildError`` carrying the driver's build log.

    >>> import netcl_lite as nl
    >>> ctx = nl.device().context
    >>> k = get_kernel(ctx, "softmax.cl", "masked_softmax_rows")
    >>> k is get_kernel(ctx, "softmax.cl", "masked_softmax_rows"), k.function_name
    (True, 'masked_softmax_rows')
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes

from . import compiler_target

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=1)
def kernel_dir() -> Path:
    """Where the ``.cl`` sources are: inside the installed package, else the repository's ``kernels/``."""
    for candidate in (_PACKAGE_DIR / "kernels", _PACKAGE_DIR.parent / "kernels"):
        if candidate.is_dir() and any(candidate.glob("*.cl")):
            return candidate
    raise FileNotFoundError(
        f"OpenCL sources not found next to {_PACKAGE_DIR}; reinstall netcl_lite "
        "(the wheel ships them as netcl_lite/kernels/*.cl)"
    )


def vector_lanes(device: cl.Device) -> int:
    """Float lanes the register-blocked kernels use on ``device``: 16 where PoCL compiles for
    AVX-512 (32 registers of 16 floats), else 8 (AVX2's 16 registers of 8; GPUs take the portable 8).

    The compiler is asked (:func:`compiles_avx512`), not the device's preferred vector width: PoCL
    3.0's LLVM 14 names an AMD Zen 4 CPU ``znver3`` and compiles for AVX2, while the device reports
    a preferred float width of 16 and links PoCL's AVX-512 builtin library. On a Zen 5, which LLVM 14
    does not know, the library has PoCL compile for ``skylake-avx512`` (:mod:`.compiler_target`):
    16 lanes."""
    cpu = bool(device.type & cl.device_type.CPU)
    return 16 if cpu and compiles_avx512(device) else 8


_PROBE_SOURCE = """
#if defined(__AVX512F__)
__kernel void avx512(__global int *x) { x[0] = 16; }
#else
__kernel void narrower(__global int *x) { x[0] = 8; }
#endif
"""


@lru_cache(maxsize=None)
def compiles_avx512(device: cl.Device) -> bool:
    """Whether the OpenCL compiler of ``device`` targets AVX-512F (its ``__AVX512F__`` macro), from
    the kernel name a two-line probe program declares; built once per device."""
    compiler_target.retarget(device)
    program = cl.Program(cl.Context([device]), _PROBE_SOURCE).build(options=list(compiler_target.build_option(device)))
    return "avx512" in program.kernel_names.split(";")


def kernel_names(filename: str) -> list[str]:
    """The ``__kernel`` function names declared in one source file, in order."""
    source = (kernel_dir() / filename).read_text()
    return re.findall(r"__kernel\s+void\s+(\w+)\s*\(", source)


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to compile; the message holds the build log."""


#: a quoted include of a kernel source: ``#include "common.h"``
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"[ \t]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)?$', re.M)


def kernel_source(filename: str) -> str:
    """The text of ``kernels/<filename>`` with each quoted ``#include`` of a file in that folder
    written in, between ``#line`` directives (a compiler's messages name the file and line they
    are on). The compiler then needs no ``-I <folder>``: its build options hold no install path,
    so PoCL's and PyOpenCL's caches of built programs (keyed by source and options) serve every
    checkout and virtual environment that holds the same sources, and a reader's fresh install
    does not compile again what this machine has built already."""
    if not isinstance(filename, str) or not filename:
        raise TypeError(f"filename must be a non-empty str naming a file in {kernel_dir()}, got {filename!r}")
    return _with_includes(filename, ())


def _with_includes(filename: str, within: tuple[str, ...]) -> str:
    if filename in within:
        raise KernelBuildError(f"{within[-1]} includes {filename}, which includes itself: "
                               f"{' -> '.join((*within, filename))}")
    folder = kernel_dir()
    path = folder / filename
    where = f" (included by {within[-1]})" if within else ""
    if Path(filename).is_absolute() or not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"filename must name a file in {folder}, got {filename!r}{where}: a kernel's source "
                         f"and what it includes are read from that folder alone")
    if not path.is_file():
        raise FileNotFoundError(f"no kernel source {filename!r} in {kernel_dir()}{where}")
    text = path.read_text()

    def written_in(m: re.Match) -> str:
        after = text.count("\n", 0, m.end()) + 2            # the line below the include
        return (f'#line 1 "{m[1]}"\n{_with_includes(m[1], (*within, filename)).rstrip(chr(10))}\n'
                f'#line {after} "{filename}"')

    return _INCLUDE.sub(written_in, text)


#: the platform whose driver keeps built programs (PoCL's kernel cache, keyed by the source and the
#: build options); PyOpenCL keeps its own cache of binaries for the others
_ICD_CACHED = "Portable Computing Language"


class _BuildFailed(RuntimeError):
    """A build failed; the message holds each device's build log."""


def _build(context: cl.Context, source: str, options: list[str]) -> cl.Program:
    """``source`` built for every device of ``context`` with ``options``.

    ``pyopencl.Program.build`` adds ``-I <PyOpenCL's install>/cl`` to the options, and PoCL keys
    its kernel cache by the source and the options, so each virtual environment (a reader's,
    a fresh clone's) would compile every kernel again. On PoCL the program is built with exactly
    ``options`` (no kernel includes PyOpenCL's headers; :func:`kernel_source` writes our own
    includes in), through the program object PyOpenCL's own uncached path builds; elsewhere
    through ``Program.build`` and its cache."""
    raw = getattr(getattr(cl, "_cl", None), "_Program", None)
    if raw is None or context.devices[0].platform.name != _ICD_CACHED:
        with warnings.catch_warnings():
            # PyOpenCL reports non-empty build logs as warnings; a failure raises cl.RuntimeError.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return cl.Program(context, source).build(options=options)
    program = raw(context, source)
    try:
        program.build(" ".join(options).encode(), context.devices)
    except cl.RuntimeError as err:
        logs = "\n".join(f"Build on {device.name}:\n{program.get_build_info(device, cl.program_build_info.LOG)}"
                         for device in context.devices)
        raise _BuildFailed(f"{err}\n{logs}") from None
    return cl.Program(program)


_programs: dict[tuple, cl.Program] = {}
_kernels: dict[tuple, cl.Kernel] = {}


#: build options of every kernel. ``-cl-denorms-are-zero``: subnormal floats (below 2^-126 ≈
#: 1.2e-38) read and produced as zero. On some CPUs each multiply-add that meets one takes a
#: microcode assist, which can slow a product by orders of magnitude; where there is no such
#: penalty the flag costs nothing (benchmarks/results/tried.md, "Subnormal floats"). An attention
#: weight or a gradient can underflow into that range; the values lost are below 1.2e-38, far
#: inside every float32 tolerance.
COMMON_OPTIONS = ("-cl-denorms-are-zero",)


def _context_key(context: cl.Context) -> int:
    return context.int_ptr


def get_program(context: cl.Context, filename: str, options: tuple[str, ...] = ()) -> cl.Program:
    """The built program for ``kernels/<filename>`` (built once per context and options)."""
    if not isinstance(options, tuple):
        raise TypeError("options must be a tuple of strings")
    key = (_context_key(context), filename, options)
    program = _programs.get(key)
    if program is None:
        source = kernel_source(filename)
        compiler_target.retarget(context.devices[0])   # a context made without nl.device() too
        target = compiler_target.build_option(context.devices[0])
        build_options = ["-cl-kernel-arg-info", *COMMON_OPTIONS, *target, *options]
        try:
            program = _build(context, source, build_options)
        except (cl.RuntimeError, _BuildFailed) as err:
            raise KernelBuildError(f"building {filename} with {build_options} failed:\n{err}") from None
        _programs[key] = program
    return program


def get_kernel(context: cl.Context, filename: str, name: str, options: tuple[str, ...] = ()) -> cl.Kernel:
    """One ``cl.Kernel`` object per (context, file, options, name), reused on every call.

    Not thread-safe: kernel arguments live on the kernel object, so two host
    threads must not launch the same kernel at once.
    """
    key = (_context_key(context), filename, options, name)
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _kernels[key] = new_kernel(context, filename, name, options)
    return kernel


def new_kernel(context: cl.Context, filename: str, name: str, options: tuple[str, ...] = ()) -> cl.Kernel:
    """A ``cl.Kernel`` of its own (the program is still built once), its scalar argument types set:
    for a launch whose arguments are set once and kept (:class:`netcl_lite.core.replay.Replay`)."""
    program = get_program(context, filename, options)
    try:
        kernel = cl.Kernel(program, name)
    except cl.LogicError:
        raise KernelBuildError(
            f"{filename} has no kernel named {name!r}; it declares {kernel_names(filename)}"
        ) from None
    kernel.set_scalar_arg_dtypes(_scalar_dtypes(kernel))
    return kernel


_VECTOR = re.compile(r"[a-z]+(2|3|4|8|16)")
_SCALARS = {"int": np.int32, "uint": np.uint32, "float": np.float32, "long": np.int64, "ulong": np.uint64,
            "short": np.int16, "ushort": np.uint16, "char": np.int8, "uchar": np.uint8, "double": np.float64}


def _scalar_dtypes(kernel: cl.Kernel) -> list:
    """Each argument's NumPy dtype (None for a buffer), read from the built kernel.

    Telling PyOpenCL the scalar types once spares each launch PyOpenCL's argument
    guessing, which at the sizes of a transformer block is most of an op's cost on PoCL.
    """
    dtypes = []
    for i in range(kernel.num_args):
        qualifier = kernel.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
        if qualifier != cl.kernel_arg_address_qualifier.PRIVATE:
            dtypes.append(None)
            continue
        type_name = kernel.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip().rstrip("\x00")
        if _VECTOR.fullmatch(type_name) and type_name.rstrip("0123456789") in _SCALARS:
            dtypes.append(getattr(cltypes, type_name))      # a vector argument, e.g. int16: 16 ints
            continue
        if type_name not in _SCALARS:
            raise KernelBuildError(f"kernel {kernel.function_name}: argument {i} has unsupported type {type_name!r}")
        dtypes.append(_SCALARS[type_name])
    return dtypes
