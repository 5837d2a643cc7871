"""The site ships the wheel it was built from, and the library's source files.

A reader outside a clone installs ``netcl_lite`` from the site itself:

    pip install http://127.0.0.1:8000/netcl_lite-0.1.0-py3-none-any.whl

so the build makes the wheel (``pip wheel --no-deps`` with the installed hatchling, no
download) and puts it at the site's root as ``netcl_lite-<version>-py3-none-any.whl``. The
wheel is kept under the cache root (:func:`netcl_lite.fingerprint.cache_root`) by a digest
of what goes into it, as hatchling itself lists it from ``pyproject.toml`` (every file of the
packages and of ``force-include``: ``kernels/``, ``benchmarks/results/capstone_seeds.json``),
with ``pyproject.toml``, the README and license files its metadata is made from and hatchling's
version, so a rebuild whose sources are unchanged reuses it and any other rebuild makes it anew.
Hatchling writes each file's mode into the wheel (644 or 755 as the owner's executable bit says, in
its reproducible mode) and dates every entry ``SOURCE_DATE_EPOCH``: the digest covers the modes as
hatchling writes them, and the build pins the date (:data:`WHEEL_EPOCH`), so the wheel's bytes
follow from what the digest covers.
It is put there whole (:func:`site_build.store.write_entry`: a symlink at either name is replaced, never
written through), then its SHA-256 beside it: builds share the cache, and an interrupted copy must never
be found as a wheel. A stored wheel is shipped
only when it matches that digest and reads as a zip archive (:func:`intact`); one damaged in the
cache is built again.

Every source file of the wheel (the package's Python and the kernels; not the seeds file it also
carries, which no excerpt cuts) is also a page of the site, ``source/<path>.html``
(:mod:`site_build.source_pages`), so a library excerpt can link to the whole file it is cut from
(:mod:`site_build.copyable`). MkDocs copies a file from disk, under ``--dirty``, only when it is
newer than its copy in the site. The wheel is a :class:`SiteCopy` instead, which a dirty build
writes exactly when the site's copy differs: a wheel taken back from the cache (its sources edited
and then restored) replaces the newer one in the site.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mkdocs.structure.files import File

from netcl_lite import fingerprint

from .paths import ROOT, pyproject_version
from .store import read_entry, write_entry

log = logging.getLogger("mkdocs.plugins.site_build.wheel")


_pyproject_version = pyproject_version


def version() -> str:
    """The project's version, as pyproject.toml's [project] table gives it."""
    return _pyproject_version((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def wheel_name() -> str:
    """The file name of the project's wheel."""
    return f"netcl_lite-{version()}-py3-none-any.whl"


def library_files(root: Path | None = None) -> list[Path]:
    """The files the wheel carries: the package's Python and the kernel sources (of the project at
    ``root``, :data:`ROOT` when None), as hatchling lists them (:func:`wheel_inputs`): a file under
    ``netcl_lite/`` that it leaves out (one ``.gitignore`` names, ``.ipynb_checkpoints/``) is none, so
    it gets no source page and no excerpt cuts it, which would say the wheel carries it."""
    from hatchling.builders.wheel import WheelBuilder

    root = ROOT if root is None else root
    files = [Path(f.path) for f in WheelBuilder(str(root)).recurse_included_files()]
    package, kernels = root / "netcl_lite", root / "kernels"
    return (sorted(p for p in files if p.is_relative_to(package) and p.suffix == ".py")
            + sorted(p for p in files if p.parent == kernels and fnmatch.fnmatch(p.name, "*.[ch]*")))


#: the date of every entry of the wheel (``SOURCE_DATE_EPOCH`` of its build): hatchling's own
#: default, 2020-02-02, fixed whatever the build's environment says
WHEEL_EPOCH = 1580601600


def _builder():
    """Hatchling's wheel builder of the project at ``ROOT``."""
    from hatchling.builders.wheel import WheelBuilder

    return WheelBuilder(str(ROOT))


def wheel_inputs() -> list[tuple[str, Path]]:
    """(path in the wheel, file) for each file the wheel carries, as hatchling lists them from
    pyproject.toml (its packages and its ``force-include``), and ("", file) for each file its metadata
    is made from: ``pyproject.toml``, the README and the license files."""
    builder = _builder()
    core = builder.metadata.core
    meta = ["pyproject.toml", *([core.readme_path] if core.readme_path else []), *core.license_files]
    return ([("", ROOT / name) for name in meta]
            + [(f.distribution_path, Path(f.path)) for f in builder.recurse_included_files()])


def wheel_sources() -> list[Path]:
    """Every file the wheel is made from (:func:`wheel_inputs`)."""
    return [path for _, path in wheel_inputs()]


def _recorded(path: Path, reproducible: bool) -> str:
    """What hatchling writes into the wheel about ``path`` besides its bytes: its mode (normalised to
    644 or 755 when the build is reproducible, hatchling's default) or, when it is not, its mode and
    modification time as they are."""
    from hatchling.builders.utils import normalize_file_permissions

    st = path.stat()
    if reproducible:
        return f"mode {normalize_file_permissions(st.st_mode):o}"
    return f"mode {st.st_mode:o} mtime {int(st.st_mtime)}"


def sources_digest() -> str:
    """A digest of :func:`wheel_inputs` (each file's path in the wheel, its bytes and what hatchling
    records of it besides, :func:`_recorded`), of hatchling's version and of the date its entries carry
    (:data:`WHEEL_EPOCH`): the name of the folder that keeps the wheel built from them."""
    from hatchling import __about__

    reproducible = bool(_builder().config.reproducible)
    h = hashlib.sha256(f"hatchling {__about__.__version__}\nSOURCE_DATE_EPOCH {WHEEL_EPOCH}\n".encode())
    for name, path in wheel_inputs():
        data = path.read_bytes()
        label = f"{path.relative_to(ROOT).as_posix()} -> {name}" if path.is_relative_to(ROOT) else f"{path} -> {name}"
        recorded = _recorded(path, reproducible) if name else ""     # metadata files: only their text counts
        h.update(f"{label} {recorded}".encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:24]


def _record(wheel: Path) -> Path:
    """Where the SHA-256 of the stored ``wheel``, written with it, is kept."""
    return wheel.with_name(wheel.name + ".sha256")


def intact(wheel: Path) -> bool:
    """Whether the stored ``wheel`` is the one written there: its bytes match the digest recorded
    with it, and it reads as a zip archive whose every member matches its CRC. A wheel emptied,
    truncated or edited in the cache, or one left without its record, is not; nor is a named pipe or a
    device at either name, which is never opened to wait on (:func:`.store.read_entry`)."""
    try:
        data = read_entry(Path(wheel))                   # a pipe or a device there: not intact, never waited on
        record = read_entry(_record(Path(wheel)))
        if data is None or record is None:
            return False
        recorded = record.decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    if recorded != hashlib.sha256(data).hexdigest():
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def build_wheel() -> Path:
    """The project's wheel, from the cache when its sources are unchanged and the stored wheel is
    :func:`intact`, else built now (and stored with its digest)."""
    stored = fingerprint.cache_root() / "wheel" / sources_digest() / wheel_name()
    if intact(stored):
        return stored
    if _record(stored).exists():
        log.warning(f"{stored} does not match the digest stored with it (emptied, truncated or edited); "
                    f"building it again")
    elif stored.exists():                  # stored before wheels had a record, or its record never written
        log.info(f"{stored} has no digest stored with it; building it again")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                               "-q", "-w", tmp, str(ROOT)], capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, SOURCE_DATE_EPOCH=str(WHEEL_EPOCH)))
        built = Path(tmp) / wheel_name()
        if proc.returncode or not built.is_file():
            raise RuntimeError(f"building {wheel_name()} failed (is hatchling installed? it is in the docs "
                               f"extra):\n{proc.stderr[-3000:]}")
        data = built.read_bytes()
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            write_entry(stored, data)                    # builds share the cache: never a half wheel there
            write_entry(_record(stored), hashlib.sha256(data).hexdigest().encode() + b"\n")   # then its digest
        except (OSError, ValueError) as err:         # a file where a folder goes, a folder where the wheel does
            raise RuntimeError(f"the wheel the site offers cannot be kept at {stored} in the build's cache "
                               f"({err}); remove what is in its way, or set NETCL_LITE_CACHE to a folder the "
                               f"build can write") from None
    log.info(f"built {wheel_name()}")
    return stored


def site_files() -> Path:
    """The wheel, built or from the cache."""
    return build_wheel()


class SiteCopy(File):
    """A file made by the build (in memory or on disk) that a dirty build writes exactly when its
    copy in the site holds other bytes (a clean build writes every file, as MkDocs does)."""

    def is_modified(self) -> bool:
        try:
            return Path(self.abs_dest_path).read_bytes() != self.content_bytes
        except OSError:                     # not in the site yet, or not readable: write it
            return True


def add_files(files, config, wheel: Path | None = None) -> None:
    """Add the wheel (``wheel``: what :func:`site_files` returned, None to make it now) to ``files``,
    at the site's root."""
    wheel = site_files() if wheel is None else wheel
    files.append(SiteCopy.generated(config, wheel_name(), abs_src_path=str(wheel)))
