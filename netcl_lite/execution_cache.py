"""Outputs of executed code, kept by a hash of everything that could change them.

What the site build runs (figures, build-output snippets, drill notebooks) and the
capstone's training run (:mod:`netcl_lite.capstone`) are deterministic given their
inputs, so an output is stored under a key made of:

* the executed source itself, and any file it reads (the caller names them);
* every source file of ``netcl_lite`` and every kernel (all of them: simpler and
  safer than tracing what a script reaches);
* the Python version and the versions of the packages the code runs on;
* every OpenCL device present, with its driver, and the ``NETCL_LITE_*``
  variables that choose one or its compiler target.

A hit returns exactly the bytes a fresh run stored, so a shown output is never
stale: any edit to any of those inputs is a miss and runs again. The store is
``<cache root>/executed/<kind>/<key>`` (:func:`cache_root`: ``.cache/netcl_lite`` in
a source checkout, so a fresh clone runs everything). ``NETCL_LITE_RERUN=1`` makes
every lookup a miss, so everything runs again and the store is refreshed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path

RERUN = "NETCL_LITE_RERUN"           # set to 1: ignore every stored output (and the capstone run)
PACKAGE = Path(__file__).resolve().parent
# What executed code runs on: netcl_lite's dependencies, the OpenCL driver, the plotting
# library of the figures and the Jupyter kernel of the notebooks.
PACKAGES = ("numpy", "pyopencl", "pocl-binary-distribution", "regex", "safetensors", "tqdm",
            "matplotlib", "ipykernel", "nbclient")
_NOT_A_CHOICE = {"NETCL_LITE_CACHE", RERUN}     # where outputs live, not what they are


def cache_root() -> Path:
    """``NETCL_LITE_CACHE`` if set, else ``.cache/netcl_lite`` in a source checkout, else
    ``netcl_lite`` under the user's cache folder (``XDG_CACHE_HOME``)."""
    if os.environ.get("NETCL_LITE_CACHE"):
        return Path(os.environ["NETCL_LITE_CACHE"])
    if (PACKAGE.parent / "pyproject.toml").is_file() and (PACKAGE.parent / "kernels").is_dir():
        return PACKAGE.parent / ".cache" / "netcl_lite"          # a source checkout
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "netcl_lite"


def rerun_forced() -> bool:
    """True when ``NETCL_LITE_RERUN`` asks for every output to be made again."""
    return os.environ.get(RERUN, "").strip() not in ("", "0")


def library_sources() -> list[Path]:
    """Every ``netcl_lite`` source file, then every kernel source and header, each sorted."""
    from .core.kernels import kernel_dir

    return sorted(PACKAGE.rglob("*.py")) + sorted(kernel_dir().glob("*.[ch]*"))


def device_description(device) -> str:
    """One OpenCL device as the key sees it: name, driver, platform and its version."""
    return f"{device.name} {device.driver_version} {device.platform.name} {device.platform.version}"


def environment() -> str:
    """Python, the package versions in ``PACKAGES``, the OpenCL devices and the choices made by
    ``NETCL_LITE_*`` variables: what executed code could depend on besides its source."""
    import pyopencl as cl

    lines = [sys.version]
    for name in PACKAGES:
        try:
            lines.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name} absent")
    lines.append(cl.VERSION_TEXT)
    try:
        lines += [device_description(d) for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as exc:                      # no platform: outputs made that way differ too
        lines.append(f"no OpenCL platform: {exc}")
    lines += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("NETCL_LITE_") and k not in _NOT_A_CHOICE)
    return "\n".join(lines)


def _file_digest(paths) -> str:
    h = hashlib.sha256()
    for path in paths:
        path = Path(path).resolve()
        name = str(path.relative_to(PACKAGE.parent)) if path.is_relative_to(PACKAGE.parent) else str(path)
        data = path.read_bytes()
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def context() -> str:
    """What every key shares: a digest of the library's sources and kernels, and :func:`environment`.
    A build computes it once and passes it to :func:`key` for each item."""
    return f"library {_file_digest(library_sources())}\n{environment()}"


def key(source: str | bytes, reads=(), shared: str | None = None) -> str:
    """The key of one executed item: its ``source``, the files it ``reads`` and the :func:`context`
    (``shared``: one computed earlier in the same build)."""
    h = hashlib.sha256()
    for part in (source, context() if shared is None else shared, _file_digest(sorted(reads))):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:24]


def _path(kind: str, item_key: str) -> Path:
    if not kind.isidentifier():
        raise ValueError(f"kind must be a plain name such as 'figure', got {kind!r}")
    return cache_root() / "executed" / kind / item_key


def lookup(kind: str, item_key: str) -> bytes | None:
    """The stored output of ``kind`` under ``item_key``, or None (not stored, or a rerun is forced)."""
    path = _path(kind, item_key)
    if rerun_forced() or not path.is_file():
        return None
    return path.read_bytes()


def store(kind: str, item_key: str, data: bytes) -> None:
    """Keep ``data`` as the output of ``kind`` under ``item_key`` (atomically: a reader sees all or nothing)."""
    path = _path(kind, item_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
