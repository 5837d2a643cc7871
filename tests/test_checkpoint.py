"""Checkpoint files: an exact round trip, and every fault named, with the model never half loaded."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from netcl_lite.nn import DecoderLM, LMConfig

CONFIG = LMConfig(vocab_size=50, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=16, tie_word_embeddings=False)


@pytest.fixture
def saved(tmp_path, queue):
    model = DecoderLM(CONFIG, queue=queue, seed=3)
    model.save_pretrained(tmp_path)
    return model, tmp_path


def weights(model):
    return {n: p.numpy() for n, p in model.parameters().items()}


def test_round_trip_is_exact(saved, queue):
    model, path = saved
    back = DecoderLM.from_pretrained(path, queue=queue)
    assert back.config == model.config
    for name, w in weights(model).items():
        assert w.tobytes() == back.parameters()[name].numpy().tobytes(), name
    ids = [[1, 2, 3, 4]]
    assert np.array_equal(back(ids).numpy(), model(ids).numpy())
    assert sorted(load_file(path / "model.safetensors")) == sorted(model.state_dict())


def _rewrite(path, change):
    tensors = load_file(path / "model.safetensors")
    change(tensors)
    save_file(tensors, path / "model.safetensors")


@pytest.mark.parametrize("change, message", [
    (lambda t: t.pop("model.layers.1.mlp.up_proj.weight"),
     r"missing model.layers.1.mlp.up_proj.weight \(expected shape \(24, 16\)\)"),
    (lambda t: t.update({"model.layers.2.self_attn.q_proj.weight": np.zeros((16, 16), np.float32)}),
     "unexpected model.layers.2.self_attn.q_proj.weight"),
    (lambda t: t.update({"model.layers.0.self_attn.k_proj.weight": np.zeros((16, 8), np.float32)}),
     r"model.layers.0.self_attn.k_proj.weight has shape \(16, 8\), expected \(8, 16\)"),
    (lambda t: t.update({"lm_head.weight": np.zeros((50, 16), np.int32)}), "lm_head.weight has dtype int32"),
    (lambda t: t.update({"model.norm.weight": np.full(16, np.nan, np.float32)}), "model.norm.weight has non-finite"),
])
def test_a_bad_tensor_is_named_and_nothing_is_loaded(saved, queue, change, message):
    model, path = saved
    _rewrite(path, change)
    with pytest.raises(ValueError, match=message):
        DecoderLM.from_pretrained(path, queue=queue)
    before = weights(model)
    with pytest.raises(ValueError, match=message):
        model.load_state_dict(load_file(path / "model.safetensors"))
    after = weights(model)
    assert all(before[n].tobytes() == after[n].tobytes() for n in before), "a failed load changed the weights"


@pytest.mark.parametrize("damage", ["truncate", "header", "empty"])
def test_truncated_or_corrupted_files_give_a_clear_error(saved, queue, damage):
    _, path = saved
    file = path / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes({"truncate": data[: len(data) // 2], "header": b"\xff" * 16 + data[16:], "empty": b""}[damage])
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        DecoderLM.from_pretrained(path, queue=queue)


@pytest.mark.parametrize("edit, message", [
    ({"architectures": ["GPT2LMHeadModel"]}, r"architectures \['GPT2LMHeadModel'\] is not supported"),
    ({"model_type": "mistral"}, "model_type 'mistral' is not supported"),
    ({"hidden_act": "gelu"}, "hidden_act='gelu' is not supported"),
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 1e4}}, "rope_type='llama3' is not supported"),
    ({"attention_bias": True}, "attention_bias=True is not supported"),
    ({"head_dim": 8}, "head_dim=8 is not supported"),
    ({"num_key_value_heads": 3}, "divisible by num_key_value_heads=3"),
    ({"vocab_size": None}, "missing vocab_size"),
])
def test_unsupported_configs_are_refused_by_name(saved, queue, edit, message):
    _, path = saved
    values = json.loads((path / "config.json").read_text())
    values.update(edit)
    values = {k: v for k, v in values.items() if v is not None}
    (path / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match=message):
        DecoderLM.from_pretrained(path, queue=queue)


def test_missing_and_sharded_files_are_named(saved, queue, tmp_path_factory):
    _, path = saved
    (path / "model.safetensors").rename(path / "model-00001-of-00002.safetensors")
    (path / "model.safetensors.index.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="sharded checkpoints are not supported"):
        DecoderLM.from_pretrained(path, queue=queue)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        DecoderLM.from_pretrained(tmp_path_factory.mktemp("empty"), queue=queue)
    (path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        DecoderLM.from_pretrained(path, queue=queue)


def test_a_tied_head_is_accepted_only_when_it_is_the_embedding(queue):
    model = DecoderLM(LMConfig(vocab_size=20, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                               num_attention_heads=2), queue=queue)
    state = model.state_dict()
    model.load_state_dict({**state, "lm_head.weight": state["model.embed_tokens.weight"].copy()})
    with pytest.raises(ValueError, match="lm_head.weight differs from model.embed_tokens.weight"):
        model.load_state_dict({**state, "lm_head.weight": state["model.embed_tokens.weight"] + 1})
    with pytest.raises(TypeError, match="state_dict must be a dict"):
        model.load_state_dict([("a", 1)])
