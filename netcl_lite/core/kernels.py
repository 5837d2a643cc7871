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

import pyopencl as cl

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


def kernel_names(filename: str) -> list[str]:
    """The ``__kernel`` function names declared in one source file, in order."""
    source = (kernel_dir() / filename).read_text()
    return re.findall(r"__kernel\s+void\s+(\w+)\s*\(", source)


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to compile; the message holds the build log."""


_programs: dict[tuple, cl.Program] = {}
_kernels: dict[tuple, cl.Kernel] = {}


def _context_key(context: cl.Context) -> int:
    return context.int_ptr


def get_program(context: cl.Context, filename: str, options: tuple[str, ...] = ()) -> cl.Program:
    """The built program for ``kernels/<filename>`` (built once per context and options)."""
    if not isinstance(options, tuple):
        raise TypeError("options must be a tuple of strings")
    key = (_context_key(context), filename, options)
    program = _programs.get(key)
    if program is None:
        path = kernel_dir() / filename
        if not path.is_file():
            raise FileNotFoundError(f"no kernel source {filename!r} in {kernel_dir()}")
        build_options = ["-I", str(kernel_dir()), *options]
        try:
            with warnings.catch_warnings():
                # PyOpenCL reports non-empty build logs as warnings; a failure raises below.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(context, path.read_text()).build(options=build_options)
        except cl.RuntimeError as err:
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
        program = get_program(context, filename, options)
        try:
            kernel = cl.Kernel(program, name)
        except cl.LogicError:
            raise KernelBuildError(
                f"{filename} has no kernel named {name!r}; it declares {kernel_names(filename)}"
            ) from None
        _kernels[key] = kernel
    return kernel
