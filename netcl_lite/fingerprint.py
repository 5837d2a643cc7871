"""The key of a run's inputs: a hash of everything that could change what executed code computes.

What the capstone's training run (:mod:`netcl_lite.capstone`), the standard-library corpus
(:mod:`netcl_lite.corpus`) and the site build's executed pages compute is deterministic
given their inputs, so each result is stored under a key (:func:`key`, the one key function
of all of them) made of:

* the executed source itself, and any file it reads (the caller names them);
* every source file of ``netcl_lite`` and every kernel (all of them: simpler and
  safer than tracing what a script reaches);
* the Python version and the versions of the packages the code runs on;
* every OpenCL device present, with its driver; and of the device the code runs on
  (:func:`device_facts`): its compute-unit count and local memory size, which choose
  how ``ops.matmul`` splits its work, and the CPU its compiler targets with the float
  lanes that follows (``NETCL_LITE_POCL_CPU``, or the target this library chose);
* every ``NETCL_LITE_*`` variable but the two that only say where results live and
  whether to reuse them (:data:`NOT_A_CHOICE`), and every ``POCL_*`` variable but those
  that change no result (:data:`POCL_NOT_A_CHOICE`: logging, PoCL's own cache, thread pinning).

Any edit to any of those inputs gives a new key. Results live under :func:`cache_root`
(``.cache/netcl_lite`` in a source checkout, so a fresh clone computes everything);
``NETCL_LITE_RERUN=1`` (or ``true``, ``yes``, ``on``) asks every user of the keys to
compute again (:func:`rerun_forced`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path

from .files import env_flag, read_regular, shown_path

RERUN = "NETCL_LITE_RERUN"           # set to 1: ignore every stored result (and the capstone run)
PACKAGE = Path(__file__).resolve().parent
#: What the library computes with: its dependencies and the OpenCL driver. A caller whose code
#: also runs on other packages (the site build's plotting and Jupyter packages) names them too.
RUN_PACKAGES = ("numpy", "pyopencl", "pocl-binary-distribution", "regex", "safetensors", "tqdm",
                "constriction")
#: the ``NETCL_LITE_*`` variables that say where results live and whether to reuse them, not what
#: they are: the only ones left out of the key
NOT_A_CHOICE = frozenset({"NETCL_LITE_CACHE", RERUN})
#: PoCL variables that change no computed value: logging, PoCL's kernel cache, thread pinning
#: (which sets the affinity of the same workers). Every other ``POCL_*`` variable is in the key:
#: ``POCL_MAX_PTHREAD_COUNT`` changes the compute-unit count, ``POCL_EXTRA_BUILD_FLAGS`` the code.
POCL_NOT_A_CHOICE = frozenset({"POCL_AFFINITY", "POCL_DEBUG", "POCL_DEBUG_LLVM_PASSES", "POCL_KERNEL_CACHE",
                               "POCL_CACHE_DIR", "POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES",
                               "POCL_VECTORIZER_REMARKS", "POCL_TRACING", "POCL_TRACING_OPT",
                               "POCL_TRACING_FILTER", "POCL_MEMORY_LIMIT"})
#: the largest file a key reads (each is read whole, into memory, to be hashed)
MAX_KEYED_BYTES = 1 << 32


def cache_root() -> Path:
    """``NETCL_LITE_CACHE`` if set (an absolute path), else ``.cache/netcl_lite`` in a source
    checkout, else ``netcl_lite`` under the user's cache folder (:func:`user_cache_folder`). A relative
    ``NETCL_LITE_CACHE`` raises ``ValueError``: each process would read it from its own working
    folder, and the build's snippets, notebooks and page blocks run in scratch folders, where they
    would find an empty cache (and train Chapter 9's model again)."""
    if os.environ.get("NETCL_LITE_CACHE"):
        root = Path(os.environ["NETCL_LITE_CACHE"])
        if not root.is_absolute():
            raise ValueError(f"NETCL_LITE_CACHE={str(root)!r} is a relative path; give an absolute one "
                             f"(export NETCL_LITE_CACHE=\"$PWD/{root}\"): processes that run in other "
                             "folders, such as the build's snippets, would each read another cache")
        return root
    if (PACKAGE.parent / "pyproject.toml").is_file() and (PACKAGE.parent / "kernels").is_dir():
        return PACKAGE.parent / ".cache" / "netcl_lite"          # a source checkout
    return user_cache_folder() / "netcl_lite"


def user_cache_folder() -> Path:
    """The user's cache folder: ``XDG_CACHE_HOME`` when it is an absolute path (the XDG base-directory
    rules ignore a relative one), else ``.cache`` in the home folder. A home folder that is no absolute
    path (``HOME=.``) raises ``ValueError``: each process would put its cache in the folder it runs in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    home = Path.home()
    if not home.is_absolute():
        raise ValueError(f"the home folder {str(home)!r} (HOME) is a relative path, so the cache would land "
                         "in whatever folder each process runs in; set HOME or XDG_CACHE_HOME to an absolute "
                         "path, or NETCL_LITE_CACHE to the cache's absolute path")
    return home / ".cache"


def rerun_forced() -> bool:
    """True when ``NETCL_LITE_RERUN`` asks for every output to be made again (``1``, ``true``,
    ``yes``, ``on``; ``0``, ``false``, ``no``, ``off`` or unset: reuse). Any other value raises
    ``ValueError`` naming the variable: a mistyped "no" must not discard stored work."""
    return env_flag(RERUN)


def library_sources() -> list[Path]:
    """Every ``netcl_lite`` source file, then every file of the kernel folder and its subfolders (a
    kernel source, a header, whatever one of them includes: :func:`netcl_lite.core.kernels.kernel_source`
    reads includes from that folder alone), each sorted."""
    from .core.kernels import kernel_dir

    kernels = kernel_dir().resolve()
    return (sorted(p for p in PACKAGE.rglob("*.py") if not p.resolve().is_relative_to(kernels))
            + sorted(p for p in kernels.rglob("*") if p.is_file() and "__pycache__" not in p.parts))


def _check_device(device) -> None:
    """TypeError naming ``device`` unless it is None or has what the key reads of a ``pyopencl.Device``
    (a stand-in that has them, with some facts replaced, is taken as one)."""
    facts = ("name", "driver_version", "platform", "max_compute_units", "local_mem_size")
    if device is not None and not all(hasattr(device, fact) for fact in facts):
        raise TypeError(f"device must be a pyopencl.Device, or None for the default device, got "
                        f"{type(device).__name__} {device!r:.80}")


def _package_names(packages) -> tuple[str, ...]:
    """``packages`` as a tuple of package names (None: :data:`RUN_PACKAGES`); TypeError naming
    ``packages`` for anything but names (str) in a list or other iterable: one name alone (a str)
    would be read as one package per character."""
    if packages is None:
        return RUN_PACKAGES
    if isinstance(packages, (str, bytes)) or not hasattr(packages, "__iter__"):
        raise TypeError(f"packages must be a list of package names (str), or None for RUN_PACKAGES, got "
                        f"{type(packages).__name__} {packages!r:.80}; wrap a single name as [name]")
    names = tuple(packages)
    bad = next((p for p in names if not isinstance(p, str)), None)
    if bad is not None:
        raise TypeError(f"packages must hold package names (str), got {type(bad).__name__} {bad!r:.80}")
    if any(not p.strip() for p in names):       # importlib's "A distribution name is required." names nothing
        raise ValueError(f"packages must hold package names, got an empty one: {list(names)!r:.200}")
    # a name is written into the environment's text as one line: a line break (or any control character) in
    # it would read as more lines, as other packages, so two different lists could share a key
    bad = next((p for p in names if any(ord(c) < 32 or ord(c) == 127 for c in p)), None)
    if bad is not None:
        raise ValueError(f"packages must hold package names, got one holding a control character (a line "
                         f"break reads as another package's line): {bad!r:.80}")
    return names


def device_description(device) -> str:
    """One OpenCL device as the key sees it: name, driver, platform and its version."""
    return f"{device.name} {device.driver_version} {device.platform.name} {device.platform.version}"


def result_variables() -> list[str]:
    """``NAME=value`` of every set environment variable that can change what executed code
    computes: ``NETCL_LITE_*`` (but ``NETCL_LITE_CACHE`` and ``NETCL_LITE_RERUN``) and
    ``POCL_*`` (but :data:`POCL_NOT_A_CHOICE`), sorted."""
    return sorted(f"{k}={v}" for k, v in os.environ.items()
                  if (k.startswith("NETCL_LITE_") and k not in NOT_A_CHOICE)
                  or (k.startswith("POCL_") and k not in POCL_NOT_A_CHOICE))


def device_facts(device=None) -> str:
    """What results depend on in the device code runs on: its description, compute units and
    local memory (``ops.matmul`` plans its tiles and splits by them), the CPU PoCL's compiler
    targets after this library's choice (``compiler_cpu``) and the float lanes the kernels use.
    ``device``: a ``pyopencl.Device``, or None for the default device (``nl.device()``, which
    is made if it does not exist yet)."""
    from .core import compiler_target
    from .core.kernels import vector_lanes

    _check_device(device)
    if device is None:
        from .core.device import NoDeviceError, manager

        try:
            device = manager.default().cl_device
        except NoDeviceError as exc:
            return f"no device: {exc}"
    return (f"runs on: {device_description(device)}; compute units {device.max_compute_units}; "
            f"local memory {device.local_mem_size}; compiler target {compiler_target.target_of(device)}; "
            f"float lanes {vector_lanes(device)}")


def environment(device=None, packages=None) -> str:
    """Python, the versions of ``packages`` (None: :data:`RUN_PACKAGES`), the OpenCL devices present, the
    device code runs on (:func:`device_facts`; ``device`` as there) and :func:`result_variables`:
    what executed code could depend on besides its source."""
    import pyopencl as cl

    _check_device(device)
    packages = _package_names(packages)
    variables = result_variables()            # before the device is made: it may set POCL_AFFINITY
    lines = [sys.version]
    for name in packages:
        try:
            lines.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name} absent")
    lines.append(cl.VERSION_TEXT)
    from .core.device import keep_pocl_cache_absolute
    from .core.forking import platforms

    keep_pocl_cache_absolute()                   # before PoCL starts: the platform query starts it
    try:
        lines += [device_description(d) for p in platforms() for d in p.get_devices()]
    except cl.Error as exc:                      # no platform: outputs made that way differ too
        lines.append(f"no OpenCL platform: {exc}")
    else:
        lines.append(device_facts(device))
    # one line a variable: NAME=value as it is, but a value holding a line break (which would read as more
    # lines, as other variables) as the name, a NUL and the value's repr, a line no plain one can be (no name
    # or value in the environment holds a NUL): each setting keyed apart, every other key as it was
    variables = [f"{name}\0{value!r}" if "\n" in value or "\r" in value else f"{name}={value}"
                 for name, _, value in (v.partition("=") for v in variables)]
    return "\n".join(lines + variables)


def file_name(path: Path) -> str:
    """The name a file has in a key: kernels as ``kernels/<file>`` and library files as
    ``netcl_lite/<path>`` whether they come from a checkout or an installed wheel (which keeps the
    kernels inside the package), other files relative to the checkout, else absolute."""
    from .core.kernels import kernel_dir

    kernels = kernel_dir().resolve()
    if path.is_relative_to(kernels):
        return f"kernels/{path.relative_to(kernels)}"
    if path.is_relative_to(PACKAGE):
        return f"netcl_lite/{path.relative_to(PACKAGE)}"
    return str(path.relative_to(PACKAGE.parent)) if path.is_relative_to(PACKAGE.parent) else str(path)


def _path_list(paths, name: str) -> list:
    """``paths`` as a list of paths (str or ``os.PathLike`` of a str); TypeError naming ``name`` for one
    path alone (a str would be read as one path per character), for anything that is no list of paths, or
    for a path-like that gives bytes (pathlib takes none)."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"{name} must be a list of paths, got {type(paths).__name__} {paths!r:.80}; "
                        f"wrap a single path as [path]")
    paths = list(paths)
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{name} must hold paths (str or os.PathLike), got {type(path).__name__} {path!r:.80}")
        if not isinstance(os.fspath(path), str):
            raise TypeError(f"{name} must hold paths of str, got {type(path).__name__} {path!r:.80} whose "
                            f"__fspath__ gives {type(os.fspath(path)).__name__}; give it as os.fsdecode(path)")
    return paths


def _resolved(path, name: str) -> Path:
    """``path`` made absolute with its links followed, as a key names it: a NUL in it is a ValueError and a
    symlink loop an OSError (ELOOP; Python 3.11's ``Path.resolve`` says RuntimeError), each naming the path
    and ``name``, as any other unreadable entry is."""
    if "\0" in os.fspath(path):
        raise ValueError(f"{shown_path(path)} in {name}: a path cannot hold a NUL character; give the file's "
                         f"real name")
    try:
        return Path(path).resolve()
    except RuntimeError as exc:                  # "Symlink loop from ..."
        raise OSError(errno.ELOOP, f"{os.strerror(errno.ELOOP)} (a symlink loop; every file in {name} must "
                                   f"be a regular file)", os.fspath(path)) from exc


def files_digest(paths, *, name: str = "paths") -> str:
    """A SHA-256 of the files ``paths`` (a list of paths, str or ``os.PathLike``: TypeError naming ``name``
    for anything else, one path alone included), each as its name in a key (:func:`file_name`, as its
    bytes: a name that is not UTF-8 keeps its own) and its bytes. Each must be a regular file of at most
    :data:`MAX_KEYED_BYTES` (a pipe would block the read, a folder has no bytes): ``ValueError`` naming
    it and ``name``, the parameter the caller took ``paths`` as, otherwise (``OSError`` for one that
    cannot be reached: missing, a symlink loop)."""
    h = hashlib.sha256()
    for path in _path_list(paths, name):
        path = _resolved(path, name)
        data = read_regular(path, MAX_KEYED_BYTES, f"every file in {name}", "a key reads each file whole")
        h.update(os.fsencode(file_name(path)) + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def context(device=None, packages=None) -> str:
    """What every key shares: a digest of the library's sources and kernels, and :func:`environment`
    (of ``device``, a ``pyopencl.Device``, or of the default device when None; of ``packages``, None
    for :data:`RUN_PACKAGES`). A caller that keys many items computes it once and passes it to
    :func:`key` for each."""
    _check_device(device)                    # before the library's sources are read
    packages = _package_names(packages)      # an iterator is read once, here
    return f"library {files_digest(library_sources())}\n{environment(device, packages)}"


def key(source: str | bytes, reads=(), shared: str | None = None) -> str:
    """The key of one executed item: its ``source``, the files it ``reads`` and the :func:`context`
    (``shared``: one computed earlier, for the device and the packages the item runs on; None: the
    default device's with :data:`RUN_PACKAGES`). Text is keyed as its UTF-8 bytes; a character that
    stands for a byte that is not UTF-8 (a ``NETCL_LITE_*`` or ``POCL_*`` variable's value as
    ``os.environ`` holds it, which any shell can export) as that byte, so such a value is keyed too
    and every UTF-8 text keeps its key. A ``source`` or ``shared`` that no bytes decode to (a lone
    surrogate that stands for no byte, or surrogates spelling another text's UTF-8) is refused with a
    ValueError naming it (:func:`_keyed_bytes`): two texts never share a key."""
    if not isinstance(source, (str, bytes)):
        raise TypeError(f"source must be str or bytes (what runs), got {type(source).__name__}")
    if shared is not None and not isinstance(shared, str):
        raise TypeError(f"shared must be a str from context(), got {type(shared).__name__}")
    if isinstance(reads, (str, bytes, os.PathLike)) or not hasattr(reads, "__iter__"):
        raise TypeError(f"reads must be a list of the files the item reads (paths), got {type(reads).__name__} "
                        f"{reads!r:.80}; wrap a single path as [path]")
    reads = _path_list(reads, "reads")
    # before the context is computed and any file read: a text no key can stand for is refused at once
    source = _keyed_bytes("source", source) if isinstance(source, str) else source
    shared = None if shared is None else _keyed_bytes("shared", shared)
    # str and Path do not compare: a mixed list is ordered as paths (one kind keeps its own order, and its keys),
    # as is one kind of os.PathLike with no order of its own ("'<' not supported", naming nothing)
    try:
        ordered = sorted(reads) if len({type(p) for p in reads}) <= 1 else sorted(reads, key=Path)
    except TypeError:
        ordered = sorted(reads, key=Path)
    h = hashlib.sha256()
    for part in (source, _keyed_bytes("shared", context()) if shared is None else shared,
                 files_digest(ordered, name="reads")):
        data = part.encode("ascii") if isinstance(part, str) else part      # the digest: hex digits
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:24]


def _keyed_bytes(name: str, text: str) -> bytes:
    """The bytes that stand for ``text`` in a key: its UTF-8, with each character U+DC80..U+DCFF as the
    byte it stands for (how Python decodes bytes that are not UTF-8 with ``surrogateescape``:
    ``os.environ``'s values, ``os.fsdecode``'s names), so that those bytes decode back to ``text``.
    Any other str is refused, with a ValueError naming ``name``: a lone surrogate that stands for no
    byte (U+D800..U+DC7F, U+DD00..U+DFFF) has no bytes, and surrogates whose bytes are valid UTF-8
    (U+DCC3 U+DCA9 are the bytes of "\u00e9") would share another text's key. The rule is one-to-one,
    and every text without surrogates keeps its UTF-8 (its key)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} holds a lone surrogate {text[exc.start]!r} at index {exc.start}, which stands "
                         f"for no byte, so no key can stand for it; repair the string") from None
    if data.decode("utf-8", "surrogateescape") != text:
        back = data.decode("utf-8", "surrogateescape")
        at = next((i for i, (a, b) in enumerate(zip(text, back)) if a != b), min(len(text), len(back)))
        raise ValueError(f"{name} holds lone surrogates from index {at} ({text[at:at + 4]!r:.40}) whose bytes are "
                         f"valid UTF-8 of another text, which would share its key; decode those bytes "
                         f"(bytes.decode('utf-8', 'surrogateescape') gives each character once)") from None
    return data
