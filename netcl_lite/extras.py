"""Optional parts of ``netcl_lite``, named by what they serve, and the check a block makes first.

The core (``pip install`` the wheel) runs every page of the site except the few blocks that
compare with other software. Those need an extra, and each such block starts with

    import netcl_lite as nl

    nl.extras.require("compare")

which raises at once, before any work, with the ``pip`` command that installs what is missing.
The command names the wheel this ``netcl_lite`` was installed from (pip records it), so it can
be pasted as it is.
"""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata
from pathlib import Path

from .checks import one_of

# extra -> the modules its blocks import (the extra's packages are in pyproject.toml)
EXTRAS: dict[str, tuple[str, ...]] = {
    "compare": ("pyppmd", "zstandard", "brotli", "zpaq"),   # the classical coders Chapter 9 compares with
    "interop": ("transformers", "torch"),                   # Hugging Face opens the checkpoints
}
# torch's CPU-only wheel: the default index would also pull several GB of CUDA libraries
TORCH_CPU = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _source() -> str:
    """What ``pip install`` was given for this netcl_lite: the wheel's URL or a clone's folder, as pip
    recorded it; a source tree's folder when it runs uninstalled."""
    try:
        record = json.loads(metadata.distribution("netcl_lite").read_text("direct_url.json") or "{}")
        version = metadata.version("netcl_lite")
    except (metadata.PackageNotFoundError, ValueError):
        record, version = {}, None
    url = record.get("url", "")
    if record.get("dir_info", {}).get("editable") and url.startswith("file://"):
        return url.removeprefix("file://")
    if url:
        return url
    tree = Path(__file__).resolve().parents[1]
    if version is None and (tree / "pyproject.toml").is_file():
        return str(tree)
    return f"netcl_lite-{version}-py3-none-any.whl"      # the file the site's home page offers


def install_command(extra: str) -> str:
    """The command that installs ``extra``, for the netcl_lite installed here.

    >>> install_command("interop").startswith("pip install torch==2.13.0")
    True
    """
    one_of("extra", extra, EXTRAS)
    source = _source()
    if "://" in source or source.endswith(".whl"):
        command = f'pip install "netcl_lite[{extra}] @ {source}"'
    else:                                                    # an editable install of a clone
        command = f'pip install -e "{source}[{extra}]"'
    return f"{TORCH_CPU}\n{command}" if extra == "interop" else command


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (none when it is installed)."""
    one_of("extra", extra, EXTRAS)
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str) -> None:
    """Raise ImportError naming the ``pip`` command when a module of ``extra`` is missing.

    A block that needs an extra calls this before anything else, so it fails at once rather
    than after its work.
    """
    absent = missing(extra)
    if absent:
        raise ImportError(f"this needs netcl_lite's {extra!r} extra; missing here: {', '.join(absent)}. "
                          f"Install it with:\n    " + install_command(extra).replace("\n", "\n    "))
