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
import math
import os
from pathlib import Path

import numpy as np
import pyopencl as cl

from .. import autograd as ag
from .. import files
from ..core import forking
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


def llama_shapes(config: LMConfig) -> dict[str, tuple[int, ...]]:
    """{transformers name: shape} that a checkpoint of ``config`` holds, linear weights (out, in).

    >>> llama_shapes(LMConfig(vocab_size=8, hidden_size=4, num_hidden_layers=1, num_attention_heads=2))["model.layers.0.self_attn.k_proj.weight"]
    (4, 4)
    """
    c = config
    d, kv = c.hidden_size, c.num_key_value_heads * c.head_dim
    per_layer = {
        "self_attn.q_proj.weight": (d, d), "self_attn.k_proj.weight": (kv, d), "self_attn.v_proj.weight": (kv, d),
        "self_attn.o_proj.weight": (d, d), "mlp.gate_proj.weight": (c.intermediate_size, d),
        "mlp.up_proj.weight": (c.intermediate_size, d), "mlp.down_proj.weight": (d, c.intermediate_size),
        "input_layernorm.weight": (d,), "post_attention_layernorm.weight": (d,),
    }
    shapes = {"model.embed_tokens.weight": (c.vocab_size, d), "model.norm.weight": (d,)}
    for i in range(c.num_hidden_layers):
        shapes.update({f"model.layers.{i}.{name}": shape for name, shape in per_layer.items()})
    if not c.tie_word_embeddings:
        shapes["lm_head.weight"] = (c.vocab_size, d)
    return shapes


def tensor_count(config: LMConfig) -> int:
    """How many tensors a checkpoint of ``config`` holds (without a tied head)."""
    return 2 + len(_LAYER_NAMES) * config.num_hidden_layers + (0 if config.tie_word_embeddings else 1)


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
        # NaN where the embedding has NaN is a copy still: the embedding's own check below names the NaN
        if table is None or np.shape(head) != np.shape(table) or not _same(head, table):
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
        if not np.isfinite(arr).all():
            raise ValueError(f"{source}: {theirs} has non-finite values")
        with np.errstate(over="ignore"):                # past float32's range: named below, not warned
            arr = arr.astype(np.float32)
        if not np.isfinite(arr).all():                  # finite in float64, infinite once float32
            raise ValueError(f"{source}: {theirs} holds values past float32's largest ({np.finfo(np.float32).max:.4g}),"
                             f" the precision DecoderLM computes in; they would be infinite: scale the weights down")
        ready[ours] = arr.T if transposed else arr
    for ours, arr in ready.items():   # every check passed: now write
        write(params[ours], arr)


def _same(a, b) -> bool:
    """Whether the arrays ``a`` and ``b`` hold the same values, NaN where the other has NaN counting as equal
    (``array_equal``'s ``equal_nan`` is only for floating-point arrays)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


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
    if archs is not None and not isinstance(archs, list):
        raise ValueError(f"{source}: architectures must be a list of class names, as transformers writes it "
                         f"([{ARCHITECTURE!r}]), got {type(archs).__name__} {archs!r:.100}")
    if archs is not None and ARCHITECTURE not in archs:
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
        # "type" is the older spelling of "rope_type" (transformers reads either), so a scaled
        # RoPE written that way must not load as plain RoPE; keys we do not implement are refused.
        kind = rope.get("rope_type", rope.get("type", "default"))
        unsupported["rope_parameters.rope_type"] = (kind, "default")
        if "rope_theta" in rope and theta is not None and rope["rope_theta"] != theta:
            raise ValueError(f"{source}: rope_theta={theta!r} and rope_parameters.rope_theta="
                             f"{rope['rope_theta']!r} disagree; give one value (rope_parameters' is the "
                             f"newer spelling)")
        theta = rope.get("rope_theta", theta)
    for name, (found, wanted) in unsupported.items():
        if found != wanted:
            raise ValueError(f"{source}: {name}={found!r} is not supported; DecoderLM implements {name}={wanted!r}")
    extra = sorted(set(rope or {}) - {"rope_type", "type", "rope_theta"})
    if extra:
        raise ValueError(f"{source}: rope_parameters holds {extra}, which DecoderLM does not implement "
                         "(it implements plain RoPE: rope_type 'default' and rope_theta only)")
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
    files.atomic_write(path / CONFIG_FILE, (json.dumps(config_to_json(model.config), indent=2) + "\n").encode())
    tmp = files.temporary_name(path / WEIGHTS_FILE)
    try:
        save_file(model.state_dict(), str(tmp), metadata={"format": "pt"})
        files.replace(tmp, path / WEIGHTS_FILE)          # flushed to disk, then renamed
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_config(directory) -> LMConfig:
    """The :class:`~netcl_lite.nn.config.LMConfig` in ``directory/config.json``, validated.

    Raises ``FileNotFoundError`` when there is no ``config.json``, ``ValueError`` for invalid
    JSON, another architecture, or an option this model does not implement.
    """
    file = Path(directory) / CONFIG_FILE
    kind = files.kind_of(file)       # a link that loops is named as one, not as missing
    if kind == "missing":
        raise FileNotFoundError(f"{file}: no {CONFIG_FILE}; is {directory} a checkpoint directory?")
    if kind == "a symlink to a missing file":
        raise FileNotFoundError(f"{file}: no such file (a symlink to the missing {os.path.realpath(file)})")
    if not file.is_file():           # a directory or a FIFO (reading one would block): say what it is
        raise ValueError(f"{file} is not a regular file ({kind}); {CONFIG_FILE} must be a JSON file")
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{file} is {file.stat().st_size} bytes; a {CONFIG_FILE} is a few hundred bytes "
                         f"(at most {MAX_CONFIG_BYTES} read): is it the right file?")
    try:
        values = json.loads(file.read_text(encoding="utf-8"), object_pairs_hook=_once_each)
    except _DoubledKey as err:
        raise ValueError(f"{file}: the key {err.args[0]!r} is given twice in one object; JSON readers keep "
                         f"either, so the model read could differ from the one meant: keep one") from None
    except (UnicodeDecodeError, ValueError) as err:   # JSONDecodeError, and integers past Python's digit limit
        raise ValueError(f"{file}: not valid JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{file}: not a config (JSON nested too deeply to read)") from None
    return config_from_json(values, str(file))


class _DoubledKey(Exception):
    """A JSON object names one key twice (:func:`_once_each`)."""


def _once_each(pairs: list) -> dict:
    """A JSON object's dict, refusing a key it gives twice (``json`` keeps the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        raise _DoubledKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


#: the largest config.json read (transformers' own are under 2 KiB)
MAX_CONFIG_BYTES = 1 << 20


def _require_weights_file(file: Path) -> None:
    """Refuse a weights path that is missing (``FileNotFoundError``) or is not a regular file, such as
    a symlink to a device or a named pipe (``ValueError`` saying what it is), before it is opened."""
    if file.is_file():
        return
    kind = files.kind_of(file)       # a link that loops is named as one, not as missing
    if kind not in ("missing", "a symlink to a missing file"):
        raise ValueError(f"{file} is {kind}, not a regular file; the weights must be a "
                         f"safetensors file")
    index = file.with_name(file.name + ".index.json")
    hint = " (sharded checkpoints are not supported)" if index.is_file() else ""
    if file.is_symlink():
        hint += f" (a symlink to the missing {os.path.realpath(file)})"
    raise FileNotFoundError(f"{file}: no such file{hint}")


def read_tensors(file) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file; a truncated or corrupted file raises ``ValueError``."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    file = Path(file)
    read_header(file)        # refuses a header that names a tensor twice: load_file keeps the last silently
    try:
        return load_file(str(file))
    except (SafetensorError, ValueError, OSError, TypeError, AttributeError) as err:   # AttributeError: a dtype NumPy lacks
        raise ValueError(f"{file}: not a readable safetensors file (truncated or corrupted?): {err}") from None


#: safetensors dtypes a checkpoint's weights may have (read as float32)
_FLOAT_DTYPES = ("F16", "F32", "F64")
#: bytes per element of the dtypes NumPy can hold (no float8 or bfloat16); the integer ones are
#: read so that the error can name the tensor and its dtype
_ITEM_BYTES = {"F16": 2, "F32": 4, "F64": 8, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "U8": 1, "U16": 2, "U32": 4,
               "U64": 8, "BOOL": 1}
#: the longest safetensors header read (names and shapes of every tensor: ~100 bytes each)
MAX_HEADER_BYTES = 100 << 20


def read_header(file) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{tensor name: (dtype, shape)} from a safetensors file's header, reading no tensor data.

    Raises ``ValueError`` naming the file for a header that is truncated, not JSON, inconsistent
    with the file's size, or holds a dtype other than F16, F32 or F64.
    """
    file = Path(file)
    _require_weights_file(file)
    size = file.stat().st_size
    bad = f"{file}: not a readable safetensors file (truncated or corrupted?)"
    with open(file, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{bad}: {size} bytes, shorter than the header's length field")
        n = int.from_bytes(head, "little")
        if n > min(MAX_HEADER_BYTES, size - 8):
            raise ValueError(f"{bad}: header length {n} exceeds the file ({size} bytes)")
        try:
            header = json.loads(f.read(n).decode("utf-8"), object_pairs_hook=_once_each)
        except _DoubledKey as err:      # JSON readers keep either entry: the tensor read could differ from the one meant
            raise ValueError(f"{bad}: the header names {err.args[0]!r} twice in one object; readers keep either "
                             f"entry, so the tensor read could differ from the one meant") from None
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise ValueError(f"{bad}: header is not JSON ({type(err).__name__})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{bad}: header is not a JSON object")
    out, data = {}, size - 8 - n
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (lo, hi) = entry["dtype"], tuple(entry["shape"]), entry["data_offsets"]
            ok = all(type(v) is int and v >= 0 for v in (*shape, lo, hi)) and lo <= hi <= data
            if ok and dtype in _ITEM_BYTES:              # the data must be exactly the shape's size
                ok = hi - lo == math.prod(shape) * _ITEM_BYTES[dtype]
            ok = ok and isinstance(dtype, str)
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{bad}: tensor {name!r} has a malformed entry in the header")
        if dtype not in _ITEM_BYTES:
            raise ValueError(f"{file}: tensor {name} has dtype {dtype}, which NumPy cannot hold; DecoderLM reads "
                             f"{', '.join(_FLOAT_DTYPES)} checkpoints (convert it, e.g. to float32, before loading)")
        out[name] = (dtype, shape)
    return out


def check_header(config: LMConfig, header: dict, source: str) -> None:
    """Refuse a config that disagrees with the file's tensor names or shapes, before anything is
    allocated: a config with a million layers or a huge width fails here, in time proportional
    to the file's header, not to the config."""
    names = dict(header)
    if config.tie_word_embeddings:
        names.pop("lm_head.weight", None)         # checked against the embedding when loading
    expected = tensor_count(config)
    if expected > 2 * len(names) + 16:           # listing the names would cost more than the file holds
        raise ValueError(f"{source} holds {len(names)} tensors; config.json (num_hidden_layers="
                         f"{config.num_hidden_layers}, tie_word_embeddings={config.tie_word_embeddings}) "
                         f"describes {expected}: the config does not belong to these weights")
    shapes = llama_shapes(config)
    missing, extra = sorted(set(shapes) - set(names)), sorted(set(names) - set(shapes))
    if missing or extra:
        parts = ["missing " + ", ".join(f"{n} (expected shape {shapes[n]})" for n in missing[:5])] if missing else []
        parts += [f"unexpected {', '.join(extra[:5])}"] if extra else []
        raise ValueError(f"{source}: {'; '.join(parts)}")
    for name, shape in shapes.items():
        if names[name][1] != shape:
            raise ValueError(f"{source}: {name} has shape {names[name][1]}, expected {shape} (from config.json)")


def from_pretrained(cls, directory, queue=None):
    """A new ``cls`` (a :class:`~netcl_lite.nn.lm.DecoderLM`) built from a checkpoint directory.

    Reads and checks the config against the file's header (names and shapes), then every
    tensor, before building; ``queue`` picks the OpenCL queue (the default device when ``None``).
    ``DecoderLM.from_pretrained`` calls this.
    """
    config = read_config(directory)
    file = Path(directory) / WEIGHTS_FILE
    check_header(config, read_header(file), str(file))
    tensors = read_tensors(file)
    model = cls(config, queue=queue)
    from_llama(model, tensors, str(file))
    return model


def write(node: ag.Node, array) -> None:
    """Overwrite a parameter's device buffer in place with ``array`` (its shape, cast to float32)."""
    host = np.ascontiguousarray(array, np.float32)
    if host.shape != node.shape:
        raise ValueError(f"expected shape {node.shape}, got {host.shape}")
    if host.size:
        forking.check()                                     # a forked child: refused, the copy would never end
        cl.enqueue_copy(node.queue, node.value.buffer, host)   # blocking, in queue order
