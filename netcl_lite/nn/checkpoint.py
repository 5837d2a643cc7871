"""Checkpoints in transformers' ``LlamaForCausalLM`` layout: ``config.json`` + ``model.safetensors``.

Names map one to one (``layers.{i}.attn.wq`` ↔ ``model.layers.{i}.self_attn.q_proj.weight``,
``ffn.w1``/``w3``/``w2`` ↔ ``mlp.gate_proj``/``up_proj``/``down_proj``, ``norm1``/``norm2`` ↔
``input_layernorm``/``post_attention_layernorm``). Our projections are stored (in, out) so
a layer is ``x @ W``; transformers stores ``nn.Linear`` weights (out, in), so every
projection is transposed on the way out and back. With ``tie_word_embeddings`` the
file holds no ``lm_head.weight``, as transformers writes it.

Loading checks everything before writing anything: the config (architecture, model
type, and every option this model does not implement), then each tensor's name, shape,
dtype and finiteness. A fault raises ``ValueError`` naming the file and the tensor;
the model is never left half loaded.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pyopencl as cl

from .. import autograd as ag
from .config import LMConfig

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
ARCHITECTURE, MODEL_TYPE = "LlamaForCausalLM", "llama"

# ours (per layer, after "layers.{i}.") -> transformers (after "model.layers.{i}."), transposed?
_LAYER_NAMES = {
    "attn.wq": ("self_attn.q_proj.weight", True),
    "attn.wk": ("self_attn.k_proj.weight", True),
    "attn.wv": ("self_attn.v_proj.weight", True),
    "attn.wo": ("self_attn.o_proj.weight", True),
    "ffn.w1": ("mlp.gate_proj.weight", True),
    "ffn.w3": ("mlp.up_proj.weight", True),
    "ffn.w2": ("mlp.down_proj.weight", True),
    "norm1.weight": ("input_layernorm.weight", False),
    "norm2.weight": ("post_attention_layernorm.weight", False),
}


def llama_names(config: LMConfig) -> dict[str, tuple[str, bool]]:
    """{transformers name: (our parameter name, transposed?)} for this config.

    >>> sorted(llama_names(LMConfig(vocab_size=8, hidden_size=4, num_hidden_layers=1, num_attention_heads=2)))[:3]
    ['model.embed_tokens.weight', 'model.layers.0.input_layernorm.weight', 'model.layers.0.mlp.down_proj.weight']
    """
    names = {"model.embed_tokens.weight": ("embed.table", False), "model.norm.weight": ("norm.weight", False)}
    for i in range(config.num_hidden_layers):
        for ours, (theirs, transposed) in _LAYER_NAMES.items():
            names[f"model.layers.{i}.{theirs}"] = (f"layers.{i}.{ours}", transposed)
    if not config.tie_word_embeddings:
        names["lm_head.weight"] = ("embed.output", True)
    return names


def to_llama(model) -> dict[str, np.ndarray]:
    """The model's weights under transformers' Llama names, projections transposed to (out, in).

    Host copies (NumPy float32, C-contiguous); with tied embeddings there is no ``lm_head.weight``.
    """
    params = model.parameters()
    out = {}
    for theirs, (ours, transposed) in llama_names(model.config).items():
        value = params[ours].numpy()
        out[theirs] = np.ascontiguousarray(value.T if transposed else value)
    return out


def from_llama(model, state, source: str = "state_dict") -> None:
    """Write a dict of Llama-named arrays into ``model``, in place; :func:`to_llama`'s inverse.

    Every name, shape, dtype and value is checked first, and a fault raises ``ValueError``
    naming ``source`` (the file, in error messages) and the tensor; only then is anything
    written. A tied model accepts an ``lm_head.weight`` only when it equals the embedding.
    """
    if not isinstance(state, dict):
        raise TypeError(f"{source} must be a dict {{name: array}}, got {type(state).__name__}")
    names = llama_names(model.config)
    params = model.parameters()
    state = dict(state)
    if model.config.tie_word_embeddings and "lm_head.weight" in state:
        # Some writers store the tied head too; accept it only when it is the embedding.
        head, table = state.pop("lm_head.weight"), state.get("model.embed_tokens.weight")
        if table is None or np.shape(head) != np.shape(table) or not np.array_equal(head, table):
            raise ValueError(f"{source}: tie_word_embeddings is true but lm_head.weight differs from "
                             "model.embed_tokens.weight; set tie_word_embeddings false in config.json")
    missing = sorted(set(names) - set(state))
    extra = sorted(set(state) - set(names))
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(f"{n} (expected shape {_expected(params, names[n])})" for n in missing))
        if extra:
            parts.append(f"unexpected {', '.join(extra)}")
        raise ValueError(f"{source}: {'; '.join(parts)}")
    ready = {}
    for theirs, (ours, transposed) in names.items():
        value = state[theirs]
        arr = np.asarray(value)
        expected = _expected(params, (ours, transposed))
        if arr.shape != expected:
            raise ValueError(f"{source}: {theirs} has shape {arr.shape}, expected {expected}")
        if arr.dtype.kind != "f":
            raise ValueError(f"{source}: {theirs} has dtype {arr.dtype}, expected floating point")
        arr = arr.astype(np.float32)
        if not np.isfinite(arr).all():
            raise ValueError(f"{source}: {theirs} has non-finite values")
        ready[ours] = arr.T if transposed else arr
    for ours, arr in ready.items():   # every check passed: now write
        write(params[ours], arr)


def _expected(params, entry) -> tuple[int, ...]:
    ours, transposed = entry
    shape = params[ours].shape
    return tuple(reversed(shape)) if transposed else tuple(shape)


# -- config.json -----------------------------------------------------------------------------

def config_to_json(config: LMConfig) -> dict:
    """``config.json`` as transformers writes it for ``LlamaForCausalLM`` (rope_theta in both spellings)."""
    return {
        "architectures": [ARCHITECTURE],
        "model_type": MODEL_TYPE,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.head_dim,
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,                                       # transformers 4.x
        "rope_parameters": {"rope_type": "default", "rope_theta": config.rope_theta},   # 5.x
        "tie_word_embeddings": config.tie_word_embeddings,
        "initializer_range": config.initializer_range,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "dtype": "float32",
        "torch_dtype": "float32",
    }


def config_from_json(values, source: str = CONFIG_FILE) -> LMConfig:
    """An LMConfig from a Llama ``config.json`` dict; anything this model does not implement is refused."""
    if not isinstance(values, dict):
        raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
    archs = values.get("architectures")
    if archs is not None and (not isinstance(archs, list) or ARCHITECTURE not in archs):
        raise ValueError(f"{source}: architectures {archs!r} is not supported; DecoderLM reads {ARCHITECTURE} checkpoints")
    if values.get("model_type") != MODEL_TYPE:
        raise ValueError(f"{source}: model_type {values.get('model_type')!r} is not supported; expected {MODEL_TYPE!r}")
    unsupported = {
        "hidden_act": (values.get("hidden_act", "silu"), "silu"),
        "attention_bias": (values.get("attention_bias", False), False),
        "mlp_bias": (values.get("mlp_bias", False), False),
        "rope_scaling": (values.get("rope_scaling"), None),
        "pretraining_tp": (values.get("pretraining_tp", 1), 1),
    }
    rope = values.get("rope_parameters")
    theta = values.get("rope_theta")
    if rope is not None:
        if not isinstance(rope, dict):
            raise ValueError(f"{source}: rope_parameters must be an object, got {rope!r}")
        unsupported["rope_parameters.rope_type"] = (rope.get("rope_type", "default"), "default")
        theta = rope.get("rope_theta", theta)
    for name, (found, wanted) in unsupported.items():
        if found != wanted:
            raise ValueError(f"{source}: {name}={found!r} is not supported; DecoderLM implements {name}={wanted!r}")
    fields = {}
    required = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "max_position_embeddings")
    for name in required:
        if name not in values:
            raise ValueError(f"{source}: missing {name}")
        fields[name] = values[name]
    for name in ("num_key_value_heads", "rms_norm_eps", "tie_word_embeddings", "initializer_range"):
        if values.get(name) is not None:
            fields[name] = values[name]
    if theta is not None:
        fields["rope_theta"] = theta
    try:
        config = LMConfig(**fields)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {err}") from None
    head_dim = values.get("head_dim")
    if head_dim is not None and head_dim != config.head_dim:
        raise ValueError(f"{source}: head_dim={head_dim} is not supported; DecoderLM uses hidden_size / "
                         f"num_attention_heads = {config.head_dim}")
    return config


# -- files -------------------------------------------------------------------------------------

def save_pretrained(model, directory) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``directory`` (made if missing); returns it.

    Each file is written whole to a temporary name and renamed, so an interrupted save
    leaves the previous checkpoint, never half of one. transformers'
    ``LlamaForCausalLM.from_pretrained(directory)`` opens the result.
    """
    from safetensors.numpy import save_file

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    _atomic_write(path / CONFIG_FILE, (json.dumps(config_to_json(model.config), indent=2) + "\n").encode())
    with tempfile.NamedTemporaryFile(dir=path, suffix=".tmp", delete=False) as tmp:
        pass
    try:
        save_file(model.state_dict(), tmp.name, metadata={"format": "pt"})
        os.replace(tmp.name, path / WEIGHTS_FILE)
    finally:
        if os.path.exists(tmp.name):
            os.unlink(tmp.name)
    return path


def read_config(directory) -> LMConfig:
    """The :class:`~netcl_lite.nn.config.LMConfig` in ``directory/config.json``, validated.

    Raises ``FileNotFoundError`` when there is no ``config.json``, ``ValueError`` for invalid
    JSON, another architecture, or an option this model does not implement.
    """
    file = Path(directory) / CONFIG_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no {CONFIG_FILE}; is {directory} a checkpoint directory?")
    try:
        values = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{file}: not valid JSON ({err})") from None
    return config_from_json(values, str(file))


def read_tensors(file) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file; a truncated or corrupted file raises ``ValueError``."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    file = Path(file)
    if not file.is_file():
        index = file.with_name(file.name + ".index.json")
        hint = " (sharded checkpoints are not supported)" if index.is_file() else ""
        raise FileNotFoundError(f"{file}: no such file{hint}")
    try:
        return load_file(str(file))
    except (SafetensorError, ValueError, OSError, TypeError) as err:
        raise ValueError(f"{file}: not a readable safetensors file (truncated or corrupted?): {err}") from None


def from_pretrained(cls, directory, queue=None):
    """A new ``cls`` (a :class:`~netcl_lite.nn.lm.DecoderLM`) built from a checkpoint directory.

    Reads and checks the config and every tensor before building; ``queue`` picks the
    OpenCL queue (the default device when ``None``). ``DecoderLM.from_pretrained`` calls this.
    """
    config = read_config(directory)
    file = Path(directory) / WEIGHTS_FILE
    tensors = read_tensors(file)
    model = cls(config, queue=queue)
    from_llama(model, tensors, str(file))
    return model


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write(node: ag.Node, array) -> None:
    """Overwrite a parameter's device buffer in place with ``array`` (its shape, cast to float32)."""
    host = np.ascontiguousarray(array, np.float32)
    if host.shape != node.shape:
        raise ValueError(f"expected shape {node.shape}, got {host.shape}")
    if host.size:
        cl.enqueue_copy(node.queue, node.value.buffer, host)   # blocking, in queue order
