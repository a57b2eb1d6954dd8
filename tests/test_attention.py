"""Every parameterization against the shared contract, and the folds that answer seeds 000/001/003."""

import pytest
import torch

from core.attention import VARIANTS
from core.attention.base import SHORT_SEQ
from core.attention.fold import fold_check, fold_stacked, standard_to_bilinear
from core.attention.registry import ATTENTION, build, count_params

NAMES = list(ATTENTION)
SHAPES = [(64, 4), (48, 3), (32, 1), (128, 8)]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def reference_forward(hw: dict, x: torch.Tensor, causal: bool) -> torch.Tensor:
    """out = sum_h softmax(X W_QK[h] X^T + mask) X W_OV[h], straight from the contract."""
    T = x.shape[1]
    scores = torch.einsum("btd,hde,bse->bhts", x, hw["W_QK"], x)  # (B, H, T, T)
    if causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    values = torch.einsum("bsd,hde->bhse", x, hw["W_OV"])  # (B, H, T, D)
    return (scores.softmax(-1) @ values).sum(1)  # (B, T, D)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_forward_backward_shapes(name, device):
    torch.manual_seed(0)
    m = build(name, 64, 4).to(device)
    x = torch.randn(3, 11, 64, device=device, requires_grad=True)
    y = m(x)
    assert y.shape == (3, 11, 64) and y.isfinite().all()
    y.square().mean().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for p in m.parameters():
        assert p.grad is not None and p.grad.isfinite().all()


@pytest.mark.parametrize("d_model,n_heads", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_count_params_matches_module(name, d_model, n_heads):
    m = build(name, d_model, n_heads)
    assert count_params(name, d_model, n_heads) == sum(p.numel() for p in m.parameters())


def test_count_params_formulas():
    D, H, r = 64, 4, 16
    G = 2
    expected = {
        "standard": 4 * D * H * r,
        "stacked": 3 * D * D + 4 * D * H * r,
        "bilinear": H * D * D + 2 * D * H * r,
        "tied_qk": 3 * D * H * r,
        "tied_qkv": 2 * D * H * r,
        "identity": 0,
        "mqa": 2 * D * H * r + 2 * D * r,
        "gqa": 2 * D * H * r + 2 * D * G * r,
    }
    for name, n in expected.items():
        assert count_params(name, D, H) == n, name


@pytest.mark.parametrize("seq_len", [9, SHORT_SEQ + 3])  # short_attention's matmuls, then SDPA
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("d_model,n_heads", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_head_weights_reproduce_forward(name, d_model, n_heads, causal, seq_len):
    torch.manual_seed(1)
    m = build(name, d_model, n_heads)
    x = torch.randn(2, seq_len, d_model)
    hw = m.head_weights()
    H, D, r = n_heads, d_model, m.d_head
    assert hw["W_QK"].shape == (H, D, D) and hw["W_OV"].shape == (H, D, D)
    for key, shape in {"W_Q": (H, D, r), "W_K": (H, D, r), "W_V": (H, D, r), "W_O": (H, r, D)}.items():
        if key in hw:
            assert hw[key].shape == shape, key
    assert not any(t.requires_grad for t in hw.values())
    with torch.no_grad():
        torch.testing.assert_close(m(x, causal=causal), reference_forward(hw, x, causal), atol=2e-5, rtol=1e-4)


def rms(t: torch.Tensor) -> float:
    return t.pow(2).mean().sqrt().item()


@pytest.mark.parametrize("d_model,n_heads", [(64, 4), (128, 8), (64, 2)])
@pytest.mark.parametrize("name", NAMES)
def test_init_scale_matches_standard(name, d_model, n_heads):
    if count_params(name, d_model, n_heads) == 0:
        pytest.skip(f"{name} has no parameters: its matrices are fixed, there is no init to choose")
    seeds = range(8)  # average over seeds: the rule is about the *expected* scale

    def mean_rms(n):
        out = {}
        for s in seeds:
            torch.manual_seed(s)
            for k, v in build(n, d_model, n_heads).head_weights().items():
                out[k] = out.get(k, 0.0) + rms(v) / len(seeds)
        return out

    ours, ref = mean_rms(name), mean_rms("standard")
    for key in ours:
        assert ours[key] == pytest.approx(ref[key], rel=0.10), key


def test_fold_stacked_into_standard_is_exact():
    torch.manual_seed(2)
    stacked = build("stacked", 64, 4)
    x = torch.randn(4, 16, 64)
    folded = fold_stacked(stacked)
    assert sum(p.numel() for p in folded.parameters()) == count_params("standard", 64, 4)
    with torch.no_grad():
        assert (stacked(x) - folded(x)).abs().max() < 1e-5


def test_standard_loaded_into_bilinear_is_exact():
    torch.manual_seed(3)
    standard = build("standard", 64, 4)
    x = torch.randn(4, 16, 64)
    bil = standard_to_bilinear(standard)
    with torch.no_grad():
        assert (standard(x) - bil(x)).abs().max() < 1e-5
    # bilinear reaches full rank D; standard's folded score matrix has rank <= r
    assert torch.linalg.matrix_rank(bil.W_bilinear[0]) <= standard.d_head
    assert torch.linalg.matrix_rank(build("bilinear", 64, 4).W_bilinear[0]) == 64


def test_fold_check_reports_tiny_errors():
    errors = fold_check()
    assert set(errors) == {"stacked → standard", "standard → bilinear"}
    assert all(0 <= e < 1e-5 for e in errors.values())


@pytest.mark.parametrize("name", ["tied_qk", "tied_qkv"])
def test_tied_scores_are_symmetric(name):
    W_QK = build(name, 64, 4).head_weights()["W_QK"]
    torch.testing.assert_close(W_QK, W_QK.mT)
    # the control: the same check on one untied layer fails, so the assertion above can
    W_QK = build("standard", 64, 4).head_weights()["W_QK"]
    assert not torch.allclose(W_QK, W_QK.mT)


def test_kv_head_defaults_and_mapping():
    assert build("gqa", 64, 8).n_kv_heads == 4
    assert build("gqa", 64, 1).n_kv_heads == 1
    assert build("mqa", 64, 8).n_kv_heads == 1
    m = build("gqa", 96, 6, n_kv_heads=2)
    hw = m.head_weights()
    for h in range(6):  # query head h reads key/value head h // (H/G)
        torch.testing.assert_close(hw["W_K"][h], m.W_K[h // 3])
        torch.testing.assert_close(hw["W_V"][h], m.W_V[h // 3])


@pytest.mark.parametrize("name", ["mqa", "gqa"])
def test_shared_kv_heads_repeated_for_threads_match_the_grouped_kernel(name, monkeypatch):
    """With fewer (batch, K/V head) pairs than threads, _attend repeats K/V per query head instead
    of SDPA's enable_gqa: outputs and gradients must not change."""
    import core.attention.base as base

    grouped = []
    sdpa = base.F.scaled_dot_product_attention
    monkeypatch.setattr(
        base.F, "scaled_dot_product_attention", lambda *a, **kw: grouped.append(kw["enable_gqa"]) or sdpa(*a, **kw)
    )
    torch.manual_seed(0)
    m = build(name, 64, 8)
    x = torch.randn(1, SHORT_SEQ + 1, 64)  # long enough for SDPA
    runs = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 2 * m.n_kv_heads):  # 1 thread: the grouped kernel; more threads than pairs: repeated K/V
            torch.set_num_threads(n)
            m.zero_grad()
            xi = x.clone().requires_grad_()
            y = m(xi)
            y.square().sum().backward()
            runs.append((y.detach(), xi.grad, [p.grad.clone() for p in m.parameters()]))
    finally:
        torch.set_num_threads(threads)
    assert grouped == [True, False]
    (y1, gx1, gp1), (y2, gx2, gp2) = runs
    torch.testing.assert_close(y1, y2)
    for a, b in zip([gx1, *gp1], [gx2, *gp2]):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)  # summation order differs between the kernels


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_short_attention_matches_sdpa_forward_and_backward(name, causal, monkeypatch):
    """The same layer on the same input through short_attention and through SDPA (SHORT_SEQ moved
    so the other path runs): outputs and every gradient agree."""
    import core.attention.base as base

    torch.manual_seed(0)
    m = build(name, 48, 6 if name != "mqa" else 3)
    x = torch.randn(3, 20, 48)  # (B, T, D)
    runs = []
    for short in (SHORT_SEQ, 0):
        monkeypatch.setattr(base, "SHORT_SEQ", short)
        m.zero_grad()
        xi = x.clone().requires_grad_()
        y = m(xi, causal=causal)
        y.square().sum().backward()
        runs.append((y.detach(), xi.grad, [p.grad.clone() for p in m.parameters()]))
    (y1, gx1, gp1), (y2, gx2, gp2) = runs
    torch.testing.assert_close(y1, y2, atol=1e-5, rtol=1e-4)
    for a, b in zip([gx1, *gp1], [gx2, *gp2]):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(name="nope", d_model=64, n_heads=4), "attention"),
        (dict(name="standard", d_model=64, n_heads=5), "n_heads"),
        (dict(name="standard", d_model=0, n_heads=4), "d_model"),
        (dict(name="standard", d_model=64, n_heads=-1), "n_heads"),
        (dict(name="standard", d_model=64, n_heads=4, d_head=0), "d_head"),
        (dict(name="gqa", d_model=64, n_heads=4, n_kv_heads=3), "n_kv_heads"),
        (dict(name="gqa", d_model=64, n_heads=4, n_kv_heads=0), "n_kv_heads"),
        (dict(name="mqa", d_model=64, n_heads=4, n_kv_heads=2), "n_kv_heads"),
        (dict(name="identity", d_model=64, n_heads=4, d_head=8), "d_head"),
    ],
)
def test_bad_arguments_raise_one_line_value_error(kwargs, field):
    for fn in (build, count_params):
        with pytest.raises(ValueError) as err:
            fn(**kwargs)
        msg = str(err.value)
        assert msg.startswith(field + ":") and "\n" not in msg


@pytest.mark.parametrize("name", NAMES)
def test_every_parameterization_states_its_formula(name):
    formula = VARIANTS[name].formula
    assert isinstance(formula, str) and formula.strip()
    # the text's symbols evaluate to the analytic count
    D, H, r, G = ATTENTION[name].resolve(64, 4, None, None)
    expr = formula.replace("·", "*").replace("²", "**2")
    assert eval(expr, {"D": D, "H": H, "r": r, "G": G}) == count_params(name, 64, 4)
