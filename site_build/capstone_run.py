"""Train Chapter 9's model before anything else runs, with a progress bar.

Chapter 9's blocks and figures all read one training run (``netcl_lite.capstone.run``),
which trains once per change of the code or the recipe and is reused after that. The
first build after a change waits for it (at most 300 s of training on two CPU cores);
this stage makes that wait visible: it trains in a child process whose progress bar
goes to the terminal, before the figures and pages that read the run are made. A run
that is already there loads in a second or two; ``NETCL_LITE_RERUN=1`` deletes the
stored runs first, so the model trains anew (as in a fresh clone). The variable is read
strictly (:func:`netcl_lite.files.env_flag`): ``0``, ``false``, ``no`` or ``off`` keep the
runs, and a value that is neither yes nor no stops the build before anything is deleted.
The plugin calls :func:`train` only when the run's inputs changed since its last call in
the same process (:class:`site_build.inputs.InputWatch`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from netcl_lite import fingerprint

from .paths import ROOT

_TRAIN = "from netcl_lite import capstone; capstone.run(progress=True)"


def train() -> None:
    """Make Chapter 9's training run, or load the one this code already made, in a child process."""
    if fingerprint.rerun_forced():
        shutil.rmtree(fingerprint.cache_root() / "capstone", ignore_errors=True)
    print("Chapter 9: training its language model, or loading the run this code already made",
          file=sys.stderr)
    proc = subprocess.run([sys.executable, "-c", _TRAIN], cwd=ROOT, stdout=subprocess.DEVNULL)
    if proc.returncode:
        raise RuntimeError("docs/chapter-9.md: Chapter 9's training run, which its blocks and figures read, "
                           "failed; its error is printed above")
