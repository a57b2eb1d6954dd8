"""The similarity metrics measure what they say, and the invariance claims shown on the page hold."""

import numpy as np
import pytest

from core.analysis.similarity import (
    INVARIANT,
    METRICS,
    change_basis,
    effective_rank,
    head_match,
    head_metrics,
    random_baseline,
    random_heads,
    subspace_overlap,
    sym_share,
)
from core.attention.registry import ATTENTION, build


def test_every_metric_has_an_invariance_claim():
    assert set(METRICS) == set(INVARIANT)


@pytest.mark.parametrize("metric", list(METRICS))
def test_invariance_claims_hold(metric):
    rng = np.random.default_rng(0)
    hw = random_heads(32, 8, 4, rng)
    hw["W_K"] = hw["W_Q"] + 0.3 * hw["W_K"]  # some Q/K structure, so cosines are not ~0 to begin with
    hw["W_QK"] = hw["W_Q"] @ hw["W_K"].transpose(0, 2, 1)
    before, after = head_metrics(hw)[metric], head_metrics(change_basis(hw, rng))[metric]
    if INVARIANT[metric]:
        np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-8)
    else:
        assert np.abs(after - before).max() > 1e-3


def test_metric_reference_values():
    rng = np.random.default_rng(1)
    S = rng.standard_normal((2, 16, 16))
    np.testing.assert_allclose(sym_share(S + S.transpose(0, 2, 1)), 1.0)
    np.testing.assert_allclose(sym_share(S - S.transpose(0, 2, 1)), 0.0, atol=1e-12)
    A = rng.standard_normal((2, 16, 4))
    np.testing.assert_allclose(subspace_overlap(A, A @ rng.standard_normal((4, 4))), 1.0)
    np.testing.assert_allclose(effective_rank(np.eye(16)[None]), 16.0, rtol=1e-6)
    assert effective_rank(A @ A.transpose(0, 2, 1)).max() <= 4 + 1e-6
    assert head_match(S, S[::-1]) == pytest.approx(1.0)


def test_random_baseline_is_computed_and_matches_theory():
    base = random_baseline(64, 8, samples=16).set_index("metric")["mean"]
    assert base["sym_QK"] == pytest.approx(0.5, abs=0.03)  # random square matrices: half symmetric
    assert base["overlap_QK"] == pytest.approx(8 / 64, abs=0.03)  # random r-dim subspaces of R^D: r/D
    assert abs(base["cos_QK"]) < 0.05


@pytest.mark.parametrize("name", list(ATTENTION))
def test_metrics_defined_for_every_parameterization(name):
    hw = {k: v.numpy() for k, v in build(name, 32, 4).head_weights().items()}
    m = head_metrics(hw)
    assert set(m) == set(METRICS) and all(v.shape == (4,) for v in m.values())
    assert np.isfinite(m["sym_QK"]).all() and np.isfinite(m["erank_OV"]).all()
    if name in ("tied_qk", "tied_qkv"):
        np.testing.assert_allclose(m["sym_QK"], 1.0, rtol=1e-5)
        np.testing.assert_allclose(m["cos_QK"], 1.0, rtol=1e-5)
    if name == "bilinear":
        assert np.isnan(m["cos_QK"]).all()


def test_step0_metrics_of_runs_sharing_a_config_and_seed_are_computed_once_and_equal_a_run_alone(monkeypatch):
    import pandas as pd

    from core.analysis import baselines
    from core.training.config import ModelConfig

    cfg = ModelConfig(attention="stacked", d_model=16, n_heads=2, vocab_size=40, max_len=24)
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "seed": [0, 0, 1]})  # a and b: two lrs of one ensemble
    keys, calls, metrics = ["run_id", "layer", "head", "metric"], [], baselines._metrics
    monkeypatch.setattr(baselines, "_metrics", lambda *a, **k: calls.append(a) or metrics(*a, **k))
    table = baselines.init_metrics(runs, {"a": cfg, "b": cfg, "c": cfg}).set_index(keys)
    assert calls == [(cfg, 0), (cfg, 1)]
    alone = metrics(cfg, 0, run_id="b").set_index(keys)
    assert table.loc["b"].equals(alone.loc["b"]) and table.loc["a"].equals(alone.loc["b"])
    assert not table.loc["c"].value.equals(table.loc["a"].value)  # another seed, another init


def test_the_random_head_match_is_the_mean_over_independent_random_layers_and_repeatable():
    import numpy as np

    from core.analysis import similarity

    rng = np.random.default_rng(0)
    pairs = [
        similarity.head_match(*(similarity.random_heads(64, 16, 4, rng)["W_QK"] for _ in range(2))) for _ in range(8)
    ]
    assert similarity.random_head_match(64, 16) == np.mean(pairs) == similarity.random_head_match(64, 16)
    assert 0 < np.mean(pairs) < 1
