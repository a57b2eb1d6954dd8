"""`python -m core pretrained --model PATH [--name NAME]`: the similarity metrics of your own checkpoint.

PATH is a local Hugging Face checkpoint directory: config.json and model.safetensors, or shards listed in
model.safetensors.index.json. Dispatched on config.json's `model_type`:
- gpt2: the fused Conv1D `c_attn` ([in, 3·D]) and `c_proj`;
- bert, roberta: `attention.self.{query,key,value}` and `attention.output.dense`;
- llama, mistral, qwen2: `self_attn.{q,k,v,o}_proj`, grouped K/V by `num_key_value_heads`. They use RoPE, so
  W_QK is the bilinear form at relative offset 0 (query and key at the same rotation).
Tensors are read one layer at a time through safetensors' torch reader (float32, float16 and bfloat16 alike),
so a 1B-parameter model needs one layer's matrices in memory, not the model. Biases are left out of W_QK.
"""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import similarity


def split_heads(Wq, Wk, Wv, Wo, n_heads: int, n_kv_heads: int) -> dict:
    """PyTorch-layout [out, in] projections -> TransformerLens per-head matrices (row-vector convention).

    Query head h reads key/value head h // (n_heads // n_kv_heads), as grouped-query attention does.
    """
    D = Wq.shape[1]
    r = Wq.shape[0] // n_heads
    group = n_heads // n_kv_heads
    W_Q = Wq.reshape(n_heads, r, D).transpose(0, 2, 1)  # (H, D, r)
    W_K = Wk.reshape(n_kv_heads, r, D).transpose(0, 2, 1).repeat(group, axis=0)  # (H, D, r)
    W_V = Wv.reshape(n_kv_heads, r, D).transpose(0, 2, 1).repeat(group, axis=0)  # (H, D, r)
    W_O = Wo.T.reshape(n_heads, r, Wo.shape[0])  # (H, r, D): head h's slice of the concatenated input
    hw = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}
    hw["W_QK"] = r**-0.5 * W_Q @ W_K.transpose(0, 2, 1)  # (H, D, D)
    hw["W_OV"] = W_V @ W_O  # (H, D, D)
    return hw


_GPT2 = ("gpt2",)
_BERT = ("bert", "roberta")
_LLAMA = ("llama", "mistral", "qwen2")
FAMILIES = _GPT2 + _BERT + _LLAMA


class Checkpoint:
    """config.json and the tensors of a checkpoint directory; each tensor read on demand, as float64 numpy."""

    def __init__(self, path):
        self.path = Path(path)
        self.config = json.loads(self._file("config.json").read_text())
        index = self.path / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text()).get("weight_map")
            if not isinstance(weight_map, dict):
                raise ValueError(f"{index.name}: no weight_map")
            self.files = {k: self._file(v) for k, v in weight_map.items()}
        else:
            single = self._file("model.safetensors")
            from safetensors import safe_open

            with safe_open(str(single), "pt") as f:
                self.files = dict.fromkeys(f.keys(), single)

    def _file(self, name: str) -> Path:
        path = self.path / name
        if not path.is_file():
            raise ValueError(f"{name}: missing from {self.path.name}/")
        return path

    def field(self, *names, default=None):
        for name in names:
            if name in self.config:
                return self.config[name]
        if default is not None:
            return default
        raise ValueError(f"config.json: no {' or '.join(names)}")

    def prefix(self, marker: str) -> str:
        """The key prefix before `marker` (e.g. 'transformer.' or 'bert.'), '' when the keys start with it."""
        for key in self.files:
            i = key.find(marker)
            if i >= 0:
                return key[:i]
        raise ValueError(f"{self.path.name}: no tensor named like '{marker}...'")

    def tensor(self, key: str) -> np.ndarray:
        from safetensors import safe_open

        if key not in self.files:
            raise ValueError(f"{self.path.name}: tensor {key} is missing")
        with safe_open(str(self.files[key]), "pt") as f:
            return f.get_tensor(key).double().numpy()


def _gpt2(ck: Checkpoint, i: int, H: int, p: str) -> dict:
    fused, proj = ck.tensor(f"{p}h.{i}.attn.c_attn.weight"), ck.tensor(f"{p}h.{i}.attn.c_proj.weight")  # [in, out]
    D = fused.shape[0]
    if fused.shape != (D, 3 * D) or proj.shape != (D, D):
        raise ValueError(f"h.{i}.attn: c_attn {fused.shape} / c_proj {proj.shape}, want ({D}, {3 * D}) / ({D}, {D})")
    Wq, Wk, Wv = (fused[:, j * D : (j + 1) * D].T for j in range(3))  # each [out, in]
    return split_heads(Wq, Wk, Wv, proj.T, H, H)


def _bert(ck: Checkpoint, i: int, H: int, p: str) -> dict:
    a = f"{p}encoder.layer.{i}.attention."
    names = ("self.query.weight", "self.key.weight", "self.value.weight", "output.dense.weight")
    return split_heads(*(ck.tensor(a + n) for n in names), H, H)


def _llama(ck: Checkpoint, i: int, H: int, p: str) -> dict:
    G = ck.field("num_key_value_heads", default=H)
    return split_heads(*(ck.tensor(f"{p}layers.{i}.self_attn.{n}_proj.weight") for n in "qkvo"), H, G)


def layers(path) -> tuple[dict, "object"]:
    """(info, a generator of head_weights() per layer) for the checkpoint at path; ValueError (one line, naming
    the file and the field) for anything it cannot read."""
    ck = Checkpoint(path)
    kind = ck.field("model_type")
    if kind not in FAMILIES:
        raise ValueError(f"config.json: model_type {kind!r} is not supported; allowed: {', '.join(FAMILIES)}")
    H = int(ck.field("n_head", "num_attention_heads"))
    n_layers = int(ck.field("n_layer", "num_hidden_layers"))
    if kind in _GPT2:
        convert, p = _gpt2, ck.prefix("h.0.attn.")
    elif kind in _BERT:
        convert, p = _bert, ck.prefix("encoder.layer.0.")
    else:
        convert, p = _llama, ck.prefix("layers.0.self_attn.")
    info = {
        "model_type": kind,
        "kind": "encoder" if kind in _BERT else "decoder",
        "n_layers": n_layers,
        "n_heads": H,
        "rope": kind in _LLAMA,
    }

    def each():
        for i in range(n_layers):
            hw = convert(ck, i, H, p)
            if hw["W_Q"].shape[0] != H or not all(np.isfinite(v).all() for v in hw.values()):
                raise ValueError(f"layer {i}: not {H} finite heads")
            yield hw

    return info, each()


def metrics(path, name: str) -> tuple[pd.DataFrame, dict]:
    """The similarity metrics of every layer of the checkpoint, read one layer at a time."""
    info, per_layer = layers(path)
    frames, shapes = [], None
    for i, hw in enumerate(per_layer):
        D, r = hw["W_Q"].shape[1:]
        if shapes not in (None, (D, r)):
            raise ValueError(f"layer {i}: heads of shape ({D}, {r}), layer 0's are {shapes}")
        shapes = (D, r)
        frames.append(similarity.metrics_frame([hw], model=name, kind=info["kind"]).assign(layer=i))
    df = pd.concat(frames, ignore_index=True)
    return df.assign(d_model=shapes[0], d_head=shapes[1], n_layers=info["n_layers"]), info


NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def run(store, path, name: str | None = None, log=print) -> pd.DataFrame:
    """Measure the checkpoint and store it as STORE/pretrained/<name>.parquet (nothing is written on an error)."""
    name = name or re.sub(r"[^A-Za-z0-9_.-]", "-", Path(path).resolve().name)[:64]
    if not NAME.fullmatch(name) or name.startswith("."):
        raise ValueError(f"name: must be 1-64 letters, digits, '_', '-' or '.', not starting with '.', got {name!r}")
    df, info = metrics(path, name)
    from ..results import store as st

    st.write_named(store, "pretrained", name, df, {"source": str(Path(path).resolve().name), **info})
    log(f"{name}: {info['model_type']}, {info['n_layers']} layers x {info['n_heads']} heads -> {store}/pretrained/")
    return df
