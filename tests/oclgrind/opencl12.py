"""Build every kernel as OpenCL C 1.2, the version Apple's OpenCL stops at: imported first by the
programs of this folder, it wraps ``pyopencl.Program.build`` and the library's own build
(``netcl_lite.core.kernels._build``, which builds on PoCL without ``Program.build``) so that each
build passes ``-cl-std=CL1.2`` (a compiler that meets an OpenCL 2.0 feature then refuses the
kernel) and counts the builds, which :func:`report` prints for tests/test_oclgrind.py to check.
"""

import pyopencl as cl

from netcl_lite.core import kernels

STD = "-cl-std=CL1.2"
built: list[str] = []
_build = cl.Program.build


def _build_as_opencl12(self, options=(), *args, **kwargs):
    options = [options] if isinstance(options, str) else list(options or ())
    options = [o for o in options if not o.startswith("-cl-std=")] + [STD]
    built.append(" ".join(options))
    return _build(self, options, *args, **kwargs)


cl.Program.build = _build_as_opencl12
_library_build = kernels._build


def _library_build_as_opencl12(context, source, options):
    options = [o for o in options if not o.startswith("-cl-std=")] + [STD]
    built.append(" ".join(options))
    return _library_build(context, source, options)


kernels._build = _library_build_as_opencl12


def report() -> str:
    """The line the test reads: how many programs were built, all with :data:`STD`."""
    assert built and all(STD in options for options in built), "a kernel was built without -cl-std=CL1.2"
    return f"OpenCL C 1.2: {len(built)} programs built with {STD}"
