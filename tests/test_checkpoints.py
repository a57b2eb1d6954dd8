"""`python -m core pretrained --model PATH`: tiny checkpoints of each family, written here with the real key names
and shapes (no hub, no network), converted and checked against W_QK and W_OV computed directly."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from core.analysis import checkpoints
from core.cli import main
from core.results import store as st

D, H, G, L = 16, 4, 2, 2  # d_model, heads, key/value heads (llama), layers
R = D // H


def _write(path, config, tensors, shards=1, dtype=torch.float32):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    tensors = {k: v.to(dtype).contiguous() for k, v in tensors.items()}
    if shards == 1:
        save_file(tensors, str(path / "model.safetensors"))
        return
    keys, weight_map = sorted(tensors), {}
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: tensors[k] for k in keys[s::shards]}
        save_file(part, str(path / name))
        weight_map.update(dict.fromkeys(part, name))
    (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def gpt2(path, **kw):
    g = torch.Generator().manual_seed(0)
    t = {}
    for i in range(L):
        t[f"transformer.h.{i}.attn.c_attn.weight"] = torch.randn(D, 3 * D, generator=g)  # Conv1D: [in, out]
        t[f"transformer.h.{i}.attn.c_attn.bias"] = torch.randn(3 * D, generator=g)
        t[f"transformer.h.{i}.attn.c_proj.weight"] = torch.randn(D, D, generator=g)
    _write(path, {"model_type": "gpt2", "n_head": H, "n_layer": L, "n_embd": D}, t, **kw)
    return {
        i: [t[f"transformer.h.{i}.attn.c_attn.weight"][:, j * D : (j + 1) * D].T for j in range(3)]
        + [t[f"transformer.h.{i}.attn.c_proj.weight"].T]
        for i in range(L)
    }, H


def bert(path, prefix="bert.", model_type="bert", **kw):
    g = torch.Generator().manual_seed(1)
    t, want = {}, {}
    for i in range(L):
        a = f"{prefix}encoder.layer.{i}.attention."
        want[i] = [torch.randn(D, D, generator=g) for _ in range(4)]  # [out, in]
        for n, w in zip(("self.query", "self.key", "self.value", "output.dense"), want[i]):
            t[a + n + ".weight"], t[a + n + ".bias"] = w, torch.zeros(D)
    _write(path, {"model_type": model_type, "num_attention_heads": H, "num_hidden_layers": L}, t, **kw)
    return want, H


def llama(path, model_type="llama", **kw):
    g = torch.Generator().manual_seed(2)
    t, want = {}, {}
    for i in range(L):
        q, k, v = (torch.randn(n * R, D, generator=g) for n in (H, G, G))
        o = torch.randn(D, H * R, generator=g)
        want[i] = [q, k, v, o]
        for n, w in zip("qkvo", want[i]):
            t[f"model.layers.{i}.self_attn.{n}_proj.weight"] = w
    config = {"model_type": model_type, "num_attention_heads": H, "num_key_value_heads": G, "num_hidden_layers": L}
    _write(path, config, t, **kw)
    return want, H


def _direct(q, k, v, o, heads, kv_heads):
    """W_QK and W_OV of each query head, straight from the [out, in] projections (row-vector convention)."""
    q, k, v, o = (x.double().numpy() for x in (q, k, v, o))
    r = q.shape[0] // heads
    qk, ov = [], []
    for h in range(heads):
        kvh = h // (heads // kv_heads)  # the grouped key/value head query head h reads
        Wq, Wk, Wv = q[h * r : (h + 1) * r].T, k[kvh * r : (kvh + 1) * r].T, v[kvh * r : (kvh + 1) * r].T  # (D, r)
        qk.append(r**-0.5 * Wq @ Wk.T)
        ov.append(Wv @ o[:, h * r : (h + 1) * r].T)
    return np.stack(qk), np.stack(ov)


CASES = {
    "gpt2": lambda p, **kw: gpt2(p, **kw),
    "bert": lambda p, **kw: bert(p, **kw),
    "roberta": lambda p, **kw: bert(p, prefix="roberta.", model_type="roberta", **kw),
    "llama": lambda p, **kw: llama(p, **kw),
    "qwen2": lambda p, **kw: llama(p, model_type="qwen2", **kw),
}


@pytest.mark.parametrize("family", list(CASES))
@pytest.mark.parametrize("variant", [dict(), dict(dtype=torch.bfloat16), dict(dtype=torch.float16, shards=3)])
def test_heads_match_a_direct_computation(tmp_path, family, variant):
    want, heads = CASES[family](tmp_path / "ck", **variant)
    info, per_layer = checkpoints.layers(tmp_path / "ck")
    kv = G if family in ("llama", "qwen2") else heads
    tol = 1e-9 if "dtype" not in variant else 0  # the stored (rounded) values are what both sides read
    for i, hw in enumerate(per_layer):
        rounded = [w.to(variant.get("dtype", torch.float32)).double() for w in want[i]]
        qk, ov = _direct(*rounded, heads, kv)
        np.testing.assert_allclose(hw["W_QK"], qk, rtol=1e-9, atol=tol + 1e-12)
        np.testing.assert_allclose(hw["W_OV"], ov, rtol=1e-9, atol=tol + 1e-12)
    assert info["n_layers"] == L and info["kind"] == ("encoder" if family in ("bert", "roberta") else "decoder")


def test_the_command_stores_the_metrics_under_the_name(tmp_path, capsys):
    llama(tmp_path / "tiny-llama")
    assert main(["pretrained", "--store", str(tmp_path / "store"), "--model", str(tmp_path / "tiny-llama")]) == 0
    df = st.load_named(tmp_path / "store", "pretrained")
    assert set(df.model) == {"tiny-llama"} and set(df.kind) == {"decoder"}
    assert sorted(df.layer.unique()) == list(range(L)) and df["head"].nunique() == H and (df.d_head == R).all()


def _bad_type(p):
    bert(p)
    (p / "config.json").write_text(json.dumps({"model_type": "t5", "num_attention_heads": H}))


def _no_weights(p):
    bert(p)
    (p / "model.safetensors").unlink()


def _bad_shape(p):
    gpt2(p)
    (p / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_head": H, "n_layer": L + 1}))


def _missing_field(p):
    llama(p)
    (p / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": L}))


def _bad_shard_map(p):
    llama(p, shards=2)
    (p / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"x": "model-9.safetensors"}}))


@pytest.mark.parametrize(
    "make, says",
    [
        (_bad_type, "model_type 't5'"),
        (_no_weights, "model.safetensors: missing"),
        (_bad_shape, "h.2.attn.c_attn.weight is missing"),
        (_missing_field, "num_attention_heads"),
        (_bad_shard_map, "model-9.safetensors: missing"),
    ],
)
def test_a_bad_checkpoint_is_one_line_exit_2_and_nothing_stored(tmp_path, capsys, make, says):
    make(tmp_path / "ck")
    with pytest.raises(SystemExit) as err:
        main(["pretrained", "--store", str(tmp_path / "store"), "--model", str(tmp_path / "ck")])
    assert err.value.code == 2
    line = capsys.readouterr().err.strip()
    assert len(line.splitlines()) == 1 and says in line and "--model" in line, line
    assert not (tmp_path / "store" / "pretrained").exists()
