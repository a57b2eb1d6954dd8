"""Tasks produce what they claim, deterministically; configs validate and hash stably."""

import subprocess
import sys

import pytest
import torch

from core.training.config import ModelConfig, TaskConfig, TrainConfig, run_id
from core.training.task_specs import TASK_SPECS
from core.training.tasks import TASKS, chance_levels, make_task


def gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", list(TASKS))
def test_task_shapes_vocab_and_determinism(name):
    task = make_task(TaskConfig(name))
    x, y, m = task.sample(64, gen(0))
    assert x.shape == y.shape == m.shape == (64, task.seq_len)
    assert x.min() >= 0 and x.max() < task.vocab_size and y[m].max() < task.vocab_size
    assert m.any(1).all()
    x2, y2, m2 = task.sample(64, gen(0))
    assert torch.equal(x, x2) and torch.equal(y, y2) and torch.equal(m, m2)
    assert not torch.equal(x, task.sample(64, gen(1))[0])
    e1, e2 = task.eval_set(), make_task(TaskConfig(name)).eval_set()
    assert e1[0].shape[0] == TaskConfig().eval_size and torch.equal(e1[0], e2[0])


@pytest.mark.parametrize("name", list(TASKS))
def test_validation_and_test_are_disjoint_from_each_other_and_from_training(name):
    length = max(3, TASK_SPECS[name].min_length)
    small = TaskConfig(name, n_symbols=4, length=length, eval_size=8)  # few possible sequences: collisions are common
    task = make_task(small if name != "associative_recall" else TaskConfig(name))
    val, test = (task.eval_set(s)[0] for s in ("val", "test"))
    held = {tuple(r) for r in val.tolist()}
    assert val.shape == test.shape and not held & {tuple(r) for r in test.tolist()}
    held |= {tuple(r) for r in test.tolist()}
    g = gen(7)
    for _ in range(20):
        x, y, m = task.sample_train(32, g)
        assert not held & {tuple(r) for r in x.tolist()}
    assert torch.equal(task.sample_train(8, gen(1))[0], make_task(task.cfg).sample_train(8, gen(1))[0])


def test_chance_levels_are_computed_on_the_test_set():
    from core.training.tasks import chance_levels

    ar = chance_levels("associative_recall")
    assert ar["uniform"] == 1 / 32
    assert 0.14 < ar["in_context"] < 0.16  # one of the 8 context values, with repeats: 1/8 + (7/32)/8
    assert 0.33 < ar["unqueried"] < 0.38  # the elimination plateau
    assert chance_levels("induction")["in_context"] == pytest.approx(1 / 12)  # 12 distinct tokens
    assert chance_levels("histogram") == {"uniform": 0.1, "in_context": pytest.approx(0.1)}


def answers(name):
    task = make_task(TaskConfig(name))
    x, y, m = task.sample(16, gen(3))
    return task, x, y, m


def test_reverse_and_sort_answers():
    for name, f in [("reverse", lambda s: s.flip(-1)), ("sort", lambda s: s.sort(-1).values)]:
        task, x, y, m = answers(name)
        L = task.L
        assert torch.equal(y[m].view(16, L), f(x[:, :L]))


def test_induction_answers_the_token_after_the_first_occurrence_at_varying_offsets():
    task = make_task(TaskConfig("induction"))
    x, y, m = task.sample(512, gen(3))
    L, offsets = task.L, []
    for row, target, mask in zip(x, y, m):
        for t in mask.nonzero().flatten().tolist():
            first = row[:L].tolist().index(row[t].item())  # A's one occurrence in the context
            assert target[t] == row[first + 1] and first + 1 < L
            offsets.append(t - first)
    assert len(set(offsets)) > L  # the offset back to A varies from query to query
    chance = chance_levels("induction")["in_context"]
    for d in set(offsets):  # a copier at any one fixed offset does no better than copying a random context token
        idx = torch.arange(L, x.shape[1])  # the query half
        src = (idx - d + 1).clamp(min=0)  # the token after the position d back
        hits = (x[:, src] == y[:, idx])[m[:, L:]].float().mean().item()
        assert hits <= chance + 0.05, d


def test_associative_recall_answers_are_the_values():
    task, x, y, m = answers("associative_recall")
    for row in range(16):
        pairs = dict(zip(x[row, : 2 * task.L : 2].tolist(), x[row, 1 : 2 * task.L : 2].tolist()))
        queries = x[row][m[row]].tolist()
        assert y[row][m[row]].tolist() == [pairs[q] for q in queries]


def test_histogram_answers_are_counts():
    task, x, y, m = answers("histogram")
    s = x[:, : task.L]
    for row in range(16):
        counts = [int((s[row] == t).sum()) for t in s[row]]
        assert (y[row][m[row]] - task.n).tolist() == counts


@pytest.mark.parametrize(
    "make,field",
    [
        (lambda: ModelConfig(attention="nope"), "attention"),
        (lambda: ModelConfig(n_layers=0), "n_layers"),
        (lambda: ModelConfig(d_model=30, n_heads=4), "n_heads"),
        (lambda: ModelConfig(mlp="yes"), "mlp"),
        (lambda: TaskConfig("nope"), "task"),
        (lambda: TaskConfig("induction", n_symbols=4, length=8), "length"),
        (lambda: TaskConfig("induction", length=3), "length"),  # too short for its offsets to vary
        (lambda: TaskConfig("sort", eval_size=0), "eval_size"),
        (lambda: TrainConfig(steps=0), "steps"),
        (lambda: TrainConfig(lr=-1.0), "lr"),
        (lambda: TrainConfig(grad_clip=0), "grad_clip"),
        (lambda: TrainConfig(warmup=-2), "warmup"),
    ],
)
def test_bad_config_names_the_field(make, field):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(field + ":") and "\n" not in str(err.value)


def test_configs_normalise_defaults_and_hash_stably():
    a = ModelConfig(attention="gqa", n_heads=4)
    assert (a.d_head, a.n_kv_heads, a.d_mlp) == (16, 2, 256)
    assert a == ModelConfig(attention="gqa", n_heads=4, d_head=16, n_kv_heads=2)
    assert a.key == ModelConfig(attention="gqa", n_heads=4, n_kv_heads=2).key
    assert a.key != ModelConfig(attention="gqa", n_heads=4, n_kv_heads=1).key
    code = "from core.training.config import ModelConfig; print(ModelConfig(attention='gqa').key)"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == ModelConfig(attention="gqa").key  # stable across processes (not Python's salted hash)
    m, t, tr = ModelConfig(), TaskConfig(), TrainConfig()
    assert run_id(m, t, tr, 0) != run_id(m, t, tr, 1)
    assert ModelConfig.from_dict(a.to_dict()) == a


def test_induction_chance_levels_match_a_simulated_blind_copier():
    task = make_task(TaskConfig("induction"))
    x, y, m = task.eval_set("test")
    g = torch.Generator().manual_seed(0)
    hits = []
    for _ in range(20):  # copy a uniformly drawn context token at every answer position
        pick = torch.randint(0, task.L, x.shape, generator=g)
        hits.append((x.gather(1, pick) == y)[m].float().mean().item())
    assert sum(hits) / len(hits) == pytest.approx(chance_levels("induction")["in_context"], abs=0.01)


@pytest.mark.parametrize("name", list(TASKS))
def test_the_declared_number_of_sequences_is_what_the_task_draws(name):
    spec = TASK_SPECS[name]
    n, L = (4, 4) if spec.min_length > 1 else (3, 3)
    n = max(n, L) if spec.distinct else n
    cfg = TaskConfig(name, n_symbols=n, length=L, eval_size=2)
    x, _, _ = make_task(cfg).sample(40_000, torch.Generator().manual_seed(0))
    assert len(torch.unique(x, dim=0)) == spec.sequences(n, L) < 40_000 / 10  # small enough to see every one


@pytest.mark.parametrize("name", list(TASKS))
def test_every_size_that_passes_validation_trains_and_the_rest_say_why_in_one_line(name):
    for n in range(1, 7):
        for L in range(1, 7):
            try:
                cfg = TaskConfig(name, n_symbols=n, length=L, eval_size=16)
            except ValueError as err:
                assert "\n" not in str(err) and str(err).split(":")[0] in ("n_symbols", "length")
                continue
            make_task(cfg).sample_train(32, torch.Generator().manual_seed(n * 10 + L))  # raised before the check
