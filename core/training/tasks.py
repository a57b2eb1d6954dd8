"""Synthetic sequence tasks: the classes behind `core.training.task_specs.TASK_SPECS`, as `TASKS`.

Each task samples (inputs, targets, loss_mask), all (N, T), from a torch.Generator, so a seed fixes
the data. targets[t] is what position t must predict; the loss and accuracy count only where
loss_mask is True (the answer positions).

Two fixed held-out sets, drawn from their own seeds: `validation` (every choice: best lr, time to
solve) and `test` (what is reported). No sequence is in both, and training batches never contain a
held-out sequence (`sample_train` redraws any that collide), so neither set is ever trained on.
The task takes its config (core.training.config.TaskConfig) duck-typed: data flows config -> tasks, one way.
"""

from types import SimpleNamespace

import torch

from .task_specs import EVAL_SIZE, TASK_SPECS, TEST_SEED, VAL_SEED, get_spec


class Task:
    def __init__(self, cfg):
        self.cfg = cfg
        self.n, self.L = cfg.n_symbols, cfg.length
        self._held_out = None

    vocab_size: int
    seq_len: int

    def answers(self) -> range:
        """The tokens an answer can be (the answer alphabet)."""
        return range(self.vocab_size)

    def candidates(self, row: torch.Tensor) -> torch.Tensor:
        """The in-context tokens a blind copier picks from (with repeats): by default the first L items."""
        return row[: self.L]

    def sample(self, n: int, gen: torch.Generator):
        raise NotImplementedError

    # held-out sets ----------------------------------------------------------------------
    def held_out(self) -> dict[str, tuple]:
        """{"val": (x, y, mask), "test": (x, y, mask)}, each eval_size rows; no sequence is in both."""
        if self._held_out is None:
            val = self.sample(self.cfg.eval_size, torch.Generator().manual_seed(self.cfg.val_seed))
            test = self._excluding(self.cfg.eval_size, torch.Generator().manual_seed(self.cfg.test_seed), val[0])
            self._held_out = {"val": val, "test": test}
            self._held_hashes = torch.cat([_row_hash(val[0]), _row_hash(test[0])])
        return self._held_out

    def eval_set(self, split: str = "test"):
        return self.held_out()[split]

    def sample_train(self, n: int, gen: torch.Generator):
        """A training batch in which no sequence is a held-out one (colliding rows are redrawn)."""
        self.held_out()
        return self._excluding(n, gen, hashes=self._held_hashes)

    def _excluding(self, n: int, gen: torch.Generator, avoid: torch.Tensor | None = None, hashes=None):
        hashes = _row_hash(avoid) if hashes is None else hashes
        x, y, m = self.sample(n, gen)
        bad = torch.isin(_row_hash(x), hashes)
        for _ in range(1000):  # rare at the default sizes (at most ~1% of batches): redraw those rows
            if not bad.any():
                return x, y, m
            rx, ry, rm = self.sample(int(bad.sum()), gen)
            x, y, m = x.clone(), y.clone(), m.clone()
            x[bad], y[bad], m[bad] = rx, ry, rm
            bad = torch.isin(_row_hash(x), hashes)
        raise ValueError(f"eval_size: {self.cfg.eval_size} held-out examples leave too few sequences to sample apart")

    # helpers ---------------------------------------------------------------------------
    def _distinct(self, n: int, k: int, gen: torch.Generator) -> torch.Tensor:
        """(n, k) rows of k distinct symbols from range(self.n)."""
        return torch.rand(n, self.n, generator=gen).argsort(-1)[:, :k]

    def _symbols(self, n: int, k: int, gen: torch.Generator) -> torch.Tensor:
        return torch.randint(0, self.n, (n, k), generator=gen)

    @staticmethod
    def _next_token(x: torch.Tensor, first: int, last: int):
        """targets = next token; answers are the positions first..last (inclusive)."""
        targets = torch.cat([x[:, 1:], torch.zeros_like(x[:, :1])], dim=1)
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[:, first : last + 1] = True
        return x, targets, mask


class AssociativeRecall(Task):
    """Multi-query associative recall (Zoology): k1 v1 ... kL vL, then each key again -> its value."""

    vocab_size = property(lambda self: 2 * self.n)  # keys 0..n-1, values n..2n-1
    seq_len = property(lambda self: 4 * self.L)

    def answers(self):
        return range(self.n, 2 * self.n)

    def candidates(self, row):
        return row[1 : 2 * self.L : 2]  # the L values of the context pairs

    def sample(self, n, gen):
        keys = self._distinct(n, self.L, gen)  # (n, L)
        values = self._symbols(n, self.L, gen) + self.n  # (n, L)
        order = torch.rand(n, self.L, generator=gen).argsort(-1)  # queries in random order
        q_keys, q_values = keys.gather(1, order), values.gather(1, order)
        context = torch.stack([keys, values], -1).reshape(n, 2 * self.L)
        queries = torch.stack([q_keys, q_values], -1).reshape(n, 2 * self.L)
        x = torch.cat([context, queries], 1)  # (n, 4L)
        x, targets, _ = self._next_token(x, 0, 0)
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[:, 2 * self.L :: 2] = True  # each query key predicts its value
        return x, targets, mask


class Induction(Task):
    """Induction (Olsson et al. 2022): L distinct random tokens, then L // 3 repeated bigrams [A][B], each A a
    random context token and B the one that followed it there; at each repeated A, predict B. The offset
    back to A's first occurrence varies from query to query, so no positional lookup answers it: a head must
    find the position whose previous token is A (a previous-token head composed with an induction head).
    The bigrams never overlap in the context, so every A and B is a different token: one answer per query."""

    vocab_size = property(lambda self: self.n)
    seq_len = property(lambda self: self.L + 2 * self.queries)
    queries = property(lambda self: max(1, self.L // 3))

    def answers(self):
        return range(self.n)

    def sample(self, n, gen):
        L, Q = self.L, self.queries
        context = self._distinct(n, L, gen)  # (n, L)
        # Q positions with gaps >= 2 (Q of L - Q, sorted, the i-th moved i on), asked in random order
        first = torch.rand(n, L - Q, generator=gen).argsort(-1)[:, :Q].sort(-1).values + torch.arange(Q)
        first = first.gather(1, torch.rand(n, Q, generator=gen).argsort(-1))  # (n, Q)
        a, b = context.gather(1, first), context.gather(1, first + 1)  # (n, Q) each
        x = torch.cat([context, torch.stack([a, b], -1).reshape(n, 2 * Q)], 1)  # (n, L + 2Q)
        x, targets, _ = self._next_token(x, 0, 0)
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[:, L::2] = True  # each repeated A predicts its B
        return x, targets, mask


class Reverse(Task):
    """s, SEP, reversed(s)."""

    vocab_size = property(lambda self: self.n + 1)  # + SEP
    seq_len = property(lambda self: 2 * self.L + 1)

    def answers(self):
        return range(self.n)

    def transform(self, s):
        return s.flip(-1)

    def sample(self, n, gen):
        s = self._symbols(n, self.L, gen)
        sep = torch.full((n, 1), self.n)
        return self._next_token(torch.cat([s, sep, self.transform(s)], 1), self.L, 2 * self.L - 1)


class Sort(Reverse):
    """s, SEP, sorted(s)."""

    def transform(self, s):
        return s.sort(-1).values


class Histogram(Task):
    """s, SEP, s again: at each token of the second copy, how many times it occurs in s."""

    vocab_size = property(lambda self: self.n + 1 + self.L)  # symbols, SEP, counts 1..L
    seq_len = property(lambda self: 2 * self.L + 1)

    def answers(self):
        return range(self.n + 1, self.n + 1 + self.L)

    def candidates(self, row):
        return row[:0]  # the counts never appear in the input

    def sample(self, n, gen):
        s = self._symbols(n, self.L, gen)  # (n, L)
        counts = (s.unsqueeze(-1) == s.unsqueeze(-2)).sum(-1)  # (n, L): occurrences of s_i in s
        x = torch.cat([s, torch.full((n, 1), self.n), s], 1)
        targets = torch.zeros_like(x)
        targets[:, self.L + 1 :] = self.n + counts  # count c is token n + c
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[:, self.L + 1 :] = True
        return x, targets, mask


_HASH = torch.randint(1, 2**61, (4096,), generator=torch.Generator().manual_seed(0))


def _row_hash(x: torch.Tensor) -> torch.Tensor:
    """(n, T) tokens -> (n,) int64 fingerprints: equal rows hash equal; a false match only redraws a row."""
    return (x.long() * _HASH[: x.shape[-1]]).sum(-1)


TASKS: dict[str, type[Task]] = {name: globals()[spec.cls] for name, spec in TASK_SPECS.items()}  # in TASK_SPECS order


def get_task(name: str) -> type[Task]:
    get_spec(name)
    return TASKS[name]


def chance_levels(name: str, cfg=None) -> dict[str, float]:
    """Accuracy of blind guessers on the task's test set (answer positions), computed, not typed in:
    - uniform: one over the answer alphabet;
    - in_context: copy a uniformly drawn in-context candidate (Task.candidates, with repeats: the
      context's values for associative_recall, the sequence for the others); the uniform guess where
      the input holds no candidate (histogram's counts never appear in it);
    - unqueried (associative_recall): uniform among the values of the pairs not yet queried, the
      elimination plateau a model can reach without recall."""
    spec = get_spec(name)
    default = SimpleNamespace(
        name=name,
        n_symbols=spec.n_symbols,
        length=spec.length,
        eval_size=EVAL_SIZE,
        val_seed=VAL_SEED,
        test_seed=TEST_SEED,
    )
    task = make_task(cfg or default)
    x, y, m = task.eval_set("test")
    n_alpha = len(task.answers())
    hits, guesses = [], []
    for row, target, mask in zip(x, y, m):
        present = task.candidates(row)
        for t in mask.nonzero().flatten().tolist():
            guesses.append((present == target[t]).float().mean().item() if len(present) else 1 / n_alpha)
            hits.append(_unqueried(task, row, t) if isinstance(task, AssociativeRecall) else None)
    out = {"uniform": 1 / n_alpha, "in_context": float(sum(guesses) / len(guesses))}
    if isinstance(task, AssociativeRecall):
        out["unqueried"] = float(sum(hits) / len(hits))
    return out


def _unqueried(task: "AssociativeRecall", row: torch.Tensor, t: int) -> float:
    """1 / the number of distinct values among the pairs whose keys have not been queried before position t."""
    L = task.L
    keys, values = row[0 : 2 * L : 2].tolist(), row[1 : 2 * L : 2].tolist()
    asked = set(row[2 * L : t : 2].tolist())
    return 1 / len({v for k, v in zip(keys, values) if k not in asked})


def make_task(cfg) -> Task:
    return get_task(cfg.name)(cfg)
