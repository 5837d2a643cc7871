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
from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes

from . import compiler_target, forking

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
    try:
        program = cl.Program(cl.Context([device]), _PROBE_SOURCE).build(
            options=list(compiler_target.build_option(device)))
    except cl.Error as exc:                 # the compiler cannot build at all (its cache folder unusable, say)
        log = " ".join(str(exc).split())[:400]
        raise KernelBuildError(f"OpenCL's compiler cannot build a two-line probe kernel on {device.name.strip()} "
                               f"({log}); check the driver's setup (PoCL: POCL_CACHE_DIR must be a folder it "
                               f"can write)") from None
    return "avx512" in program.kernel_names.split(";")


def kernel_names(filename: str) -> list[str]:
    """The ``__kernel`` function names declared in one source file, in order."""
    source = (kernel_dir() / filename).read_text()
    return re.findall(r"__kernel\s+void\s+(\w+)\s*\(", source)


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to compile; the message holds the build log."""


def kernel_source(filename: str) -> str:
    """The text of ``kernels/<filename>`` with each quoted ``#include`` written in, between ``#line``
    directives (a compiler's messages name the file and line they are on). The compiler then needs
    no ``-I <folder>``: its build options hold no install path, so PoCL's and PyOpenCL's caches of
    built programs (keyed by source and options) serve every checkout and virtual environment that
    holds the same sources, and a reader's fresh install does not compile again what this machine
    has built already.

    Includes are read as the C preprocessor reads them (:func:`_directives`): an include inside a
    comment is none, and a comment after one may run onto the next lines. ``#include "name"`` is
    looked for beside the file that includes it, then in the kernel folder (as ``-I <folder>``
    would); a name that leads outside the kernel folder is refused with ``ValueError``. A file that
    holds ``#pragma once`` is written in once; one that includes itself, directly or not, raises
    :class:`KernelBuildError` (an include guard does not stop the writing in)."""
    if not isinstance(filename, str) or not filename:
        raise TypeError(f"filename must be a non-empty str naming a file in {kernel_dir()}, got {filename!r}")
    folder = kernel_dir()
    return _with_includes(_resolve(filename, None, folder, None), folder, (), set())


def _shown(path: Path, folder: Path) -> str:
    """How messages and ``#line`` directives name a kernel file: its path in the kernel folder."""
    return path.relative_to(folder.resolve()).as_posix()


def _resolve(name: str, beside: Path | None, folder: Path, by: str | None) -> Path:
    """The file ``#include "name"`` in a file of the folder ``beside`` reads (``beside`` None: the kernel
    source ``name`` itself), resolved: beside the including file first, then in the kernel ``folder``."""
    where = f" (included by {by})" if by else ""
    inside = folder.resolve()
    candidates = [(beside / name).resolve()] if beside is not None else []
    candidates.append((folder / name).resolve())
    found = next((c for c in candidates if c.is_file()), None)
    if Path(name).is_absolute() or any(not c.is_relative_to(inside) for c in ([found] if found else candidates)):
        raise ValueError(f"filename must name a file in {folder}, got {name!r}{where}: a kernel's source "
                         f"and what it includes are read from that folder alone")
    if found is None:
        raise FileNotFoundError(f"no kernel source {name!r} in {folder}{where}")
    return found


def _with_includes(path: Path, folder: Path, chain: tuple[Path, ...], once: set[Path]) -> str:
    """The text of ``path`` with its includes written in; ``chain``: the files that include it, outermost
    first; ``once``: the files read so far that hold ``#pragma once``."""
    shown = _shown(path, folder)
    text = path.read_text()
    pieces, at = [], 0
    for directive in _directives(text, shown):
        pieces.append(text[at:directive.start])
        at = directive.end
        resume = f'#line {text.count(chr(10), 0, directive.end) + 2} "{shown}"'    # the line below it
        if directive.name is None:               # #pragma once: kept here, not handed to the compiler,
            once.add(path)                       # which warns about it in the file it compiles
            pieces.append(resume)
            continue
        target = _resolve(directive.name, path.parent, folder, shown)
        if target in once:
            pieces.append(resume)
            continue
        if target in (*chain, path):
            names = [_shown(p, folder) for p in (*chain, path, target)]
            raise KernelBuildError(f"{shown} includes {names[-1]}, which includes itself: {' -> '.join(names)}")
        body = _with_includes(target, folder, (*chain, path), once)
        pieces.append(f'#line 1 "{_shown(target, folder)}"\n{body.rstrip(chr(10))}\n{resume}')
    pieces.append(text[at:])
    return "".join(pieces)


class _Directive(NamedTuple):
    """One ``#include "name"`` or ``#pragma once`` of a source, as the preprocessor reads it: the
    original text's span from the start of the directive's line to the newline that ends it (after
    line splicing and with comments as spaces, a directive may cover several lines), and the name
    included (None for ``#pragma once``)."""

    start: int
    end: int
    name: str | None


#: the C preprocessor's trigraphs, replaced before anything else is read (PoCL's compiler converts them)
_TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}", "-": "~"}


def _spliced(text: str) -> tuple[str, list[int]]:
    """``text`` as the preprocessor reads it before comments and directives: trigraphs replaced
    (``??=`` is ``#``, ``??/`` a backslash), then each backslash-newline removed (line splicing); and
    the offset in ``text`` of each character kept, plus one past the end."""
    kept, where, i = [], [], 0
    for m in re.finditer(r"\?\?[=/'()!<>-]", text):
        kept.append(text[i:m.start()])
        where.extend(range(i, m.start()))
        kept.append(_TRIGRAPHS[m[0][2]])
        where.append(m.start())
        i = m.end()
    kept.append(text[i:])
    where.extend(range(i, len(text) + 1))
    replaced, at = "".join(kept), where
    kept, where, i = [], [], 0
    for m in re.finditer(r"\\\r?\n", replaced):
        kept.append(replaced[i:m.start()])
        where.extend(at[i:m.start()])
        i = m.end()
    kept.append(replaced[i:])
    where.extend(at[i:])
    return "".join(kept), where


def _blank(s: str, i: int) -> int:
    """The offset in ``s`` (spliced text) past the blanks and comments at ``i``, not past a newline but
    past those inside a block comment (a comment is one space: the line goes on after it)."""
    while i < len(s):
        if s[i] in " \t\f\v\r":
            i += 1
        elif s.startswith("/*", i):
            end = s.find("*/", i + 2)
            i = len(s) if end < 0 else end + 2
        elif s.startswith("//", i):
            end = s.find("\n", i)
            i = len(s) if end < 0 else end
        else:
            break
    return i


def _word(s: str, i: int) -> tuple[str, int]:
    m = _IDENTIFIER.match(s, i)
    return (m[0], m.end()) if m else ("", i)


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
#: a run of code that holds no quote, no slash and no blank: nothing in it starts a comment or a literal
_OTHER = re.compile(r"[^\"'/\s]+")
#: a string or character literal, to its closing quote or the end of its line
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?', re.S)


def _directives(text: str, filename: str) -> list[_Directive]:
    """The quoted includes and ``#pragma once`` lines of one source, read in one pass as the C
    preprocessor reads them: backslash-newlines spliced first; then ``/* … */`` and ``//`` comments,
    outside string and character literals, are blanks (so an include inside a block comment is not
    one, and a comment after an include may run onto the next lines); a directive is a line whose
    first token is ``#`` and ends at the first newline outside a comment. An include ``<name>`` or
    ``MACRO`` is left to the compiler. Raises :class:`KernelBuildError` for an include with more
    than blanks after its name (the compiler would warn and ignore it)."""
    s, where = _spliced(text)
    found, i, line_start, first = [], 0, 0, True
    while i < len(s):
        i = _blank(s, i)
        if i >= len(s):
            break
        c = s[i]
        if c == "\n":
            i += 1
            line_start, first = i, True
            continue
        if first and (c == "#" or s.startswith("%:", i)):     # '%:' is the digraph of '#'
            name, j = _word(s, _blank(s, i + (1 if c == "#" else 2)))
            j = _blank(s, j)
            included = None
            if name == "include" and s.startswith('"', j):
                close = s.find('"', j + 1)
                newline = s.find("\n", j + 1)
                if close < 0 or 0 <= newline < close:
                    raise KernelBuildError(f"{filename}:{text.count(chr(10), 0, where[j]) + 1}: an #include's "
                                           f'"name" has no closing quote')
                included, j = s[j + 1:close], _blank(s, close + 1)
                if j < len(s) and s[j] != "\n":
                    raise KernelBuildError(f"{filename}:{text.count(chr(10), 0, where[j]) + 1}: #include "
                                           f'"{included}" is followed by more than a comment on its line')
            elif name == "pragma":
                word, k = _word(s, j)
                if word == "once" and (_blank(s, k) >= len(s) or s[_blank(s, k)] == "\n"):
                    j = _blank(s, k)
                    found.append(_Directive(where[line_start], where[j], None))
            if included is not None:
                found.append(_Directive(where[line_start], where[j], included))
            i, first = j, False
            continue
        first = False
        token = _LITERAL.match(s, i) or _OTHER.match(s, i)
        i = token.end() if token else i + 1
    return found


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
        forking.check()                             # a forked child: refused, its launches would never run
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
