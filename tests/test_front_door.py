"""One import reaches what the pages use; NumPy goes in wherever a Tensor or Node does; a
training loop's device memory stays flat."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netcl_lite as nl
from netcl_lite.core.tensor import device_bytes_in_use


def test_import_netcl_lite_as_nl_gives_the_names_the_pages_use():
    for name in ("Tensor", "device", "Tape", "tensor", "ops", "nn", "text", "Node", "constant", "synchronize"):
        assert hasattr(nl, name), name
    dev = nl.device()
    assert dev is nl.device("auto") and dev.queue is nl.device().queue
    t = nl.Tensor.from_host(dev.queue, np.arange(4.0))
    node = nl.tensor(t)
    assert np.array_equal(t.numpy(), np.asarray(node)) and np.array_equal(node.numpy(), np.arange(4.0))
    assert nl.nn.RotaryAttention is nl.nn.transformer.RotaryAttention
    assert nl.text.BPETokenizer.__name__ == "BPETokenizer"


def test_nn_layers_take_numpy_arrays():
    q = nl.device().queue
    x = np.random.default_rng(0).standard_normal((2, 3, 16)).astype(np.float64)   # float64 is fine: it is converted
    block = nl.nn.DecoderBlock(q, 16, 4, 2, 32, max_seq_len=8)
    from_numpy = block(x).numpy()
    from_tensor = block(nl.Tensor.from_host(q, x)).numpy()
    np.testing.assert_array_equal(from_numpy, from_tensor)
    assert nl.nn.RMSNorm(q, 16)(x).shape == (2, 3, 16)
    assert nl.nn.FeedForward(q, 16, 24)(x).shape == (2, 3, 16)


def test_backward_shorthand_and_its_errors():
    with nl.Tape():
        w = nl.tensor(np.ones((2, 2)))
        loss = (w @ w).sum()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 4.0))
    with pytest.raises(ValueError, match="not recorded on a Tape"):
        nl.tensor(np.ones(2)).backward()


@pytest.mark.parametrize("read_back", [True, False])
@pytest.mark.slow
def test_device_memory_stays_flat_over_a_200_step_training_loop(read_back):
    """Forward, backward and an SGD update, 200 times. With a read-back per step (the usual
    loop) the live device memory after step 200 equals that after step 20, buffer for buffer;
    without one, what the queue keeps alive between syncs stays bounded."""
    q = nl.device().queue
    rng = np.random.default_rng(1)
    block = nl.nn.DecoderBlock(q, 32, 4, 2, 64, max_seq_len=16)
    params = block.parameters()
    x = nl.Tensor.from_host(q, rng.standard_normal((2, 16, 32)).astype(np.float32))
    target = nl.Tensor.from_host(q, rng.standard_normal((2, 16, 32)).astype(np.float32))
    live = {}
    for step in range(1, 201):
        with nl.Tape():
            loss = ((block(x) - target) * (block(x) - target)).mean()
        loss.backward()
        for p in params.values():
            p.value, p.grad = nl.ops.sub(p.value, nl.ops.scale(p.grad, 1e-3)), None
        if read_back:
            loss.numpy()
        live[step] = device_bytes_in_use(q.context)
    nl.synchronize()
    if read_back:
        assert live[200] == live[20], f"live (bytes, buffers) grew from {live[20]} to {live[200]}"
    else:
        assert max(b for b, _ in live.values()) <= 4 * max(b for b, _ in (live[s] for s in range(1, 21)))


def test_optim_train_and_the_language_model_are_reachable_from_a_fresh_import():
    """In a fresh interpreter (no other test has imported the submodules first)."""
    code = ("import netcl_lite as nl\n"
            "assert nl.optim.AdamW.__name__ == 'AdamW' and nl.train.TrainConfig.__name__ == 'TrainConfig'\n"
            "assert nl.nn.DecoderLM is nl.nn.lm.DecoderLM and nl.nn.LMConfig is nl.nn.config.LMConfig\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _library_imports(path: Path, module: str, modules: set[str]) -> set[str]:
    """The netcl_lite modules that ``module`` imports, anywhere in the file (function bodies too):
    relative (``from .x import y``) and absolute (``from netcl_lite.x import y``, ``import netcl_lite.x``)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1] + [node.module or ""]
                base = ".".join(parts).rstrip(".")
            elif node.module and node.module.split(".")[0] == "netcl_lite":
                base = node.module
            else:
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "netcl_lite")
    return found & modules


def test_the_import_parser_sees_relative_and_absolute_imports(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("from .ops import matmul\nfrom netcl_lite.core.tensor import Tensor\n"
                    "import netcl_lite.masks\nimport numpy\n\ndef f():\n    from netcl_lite import sampling\n")
    modules = {"netcl_lite.ops", "netcl_lite.ops.matmul", "netcl_lite.core.tensor", "netcl_lite.masks",
               "netcl_lite.sampling", "netcl_lite.budget"}
    assert _library_imports(path, "netcl_lite.mod", modules) == modules - {"netcl_lite.ops", "netcl_lite.budget"}


def test_no_two_library_modules_import_each_other():
    root = Path(nl.__file__).resolve().parent
    paths = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    imports = {m: _library_imports(p, m, set(paths)) for m, p in paths.items()}
    loops = sorted(f"{a} <-> {b}" for a in imports for b in imports[a] if a < b and a in imports[b])
    assert not loops, f"modules that import each other: {loops}"


def test_no_test_module_imports_another():
    """Shared fixtures and data live in conftest.py or a helper module (kernel_cases, text_cases,
    doc_blocks …), never in a test module that another one imports."""
    tests = Path(__file__).resolve().parent
    found = []
    for path in sorted(tests.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.name} imports {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert not found, found
