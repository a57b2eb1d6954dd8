"""The Parameters page's live computations (parameter counts of built modules, the two folds), each run in a
child process: they need torch, and the server never imports it (~200 MB and 1.5 s that every visitor of every
page would otherwise pay).

A question is asked in the background and answered as a Future: the page draws the rest meanwhile, then, where
the answer is not yet in, a note in place of the sections that need it and a fragment that reruns the page when
it arrives (the first draw never waits for a torch import). Answers are kept server-wide,
per distinct question (ANSWERS of them), so each costs one child; a failed one is asked again once it
has stood RETRY_AFTER seconds (not at once: the page's rerun on an answer must show the error, not ask anew).
"""

import json
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import pandas as pd

_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds; a child that takes longer is stopped and the page says so
ANSWERS = 64  # distinct questions kept (a few KB each)
RETRY_AFTER = 30  # seconds a failed answer stands (the page shows its error) before the question is asked again

_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="attention-lab-live")  # children at once
_lock = threading.Lock()
_answers: "OrderedDict[str, Future]" = OrderedDict()


def _ask(what: str, **kw):
    """Run `what` with these arguments in a fresh interpreter; its JSON answer, or a one-line RuntimeError."""
    cmd = [sys.executable, "-m", "core.dashboard.live", what, json.dumps(kw)]
    try:
        done = subprocess.run(cmd, cwd=_ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what}: took over {TIMEOUT} s") from None
    if done.returncode:
        raise RuntimeError(f"{what}: " + (done.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(done.stdout)


def _asked(what: str, read=None, **kw) -> Future:
    """The answer to this question (`read` applied to the child's JSON): kept from before, or asked now."""
    key = json.dumps([what, kw], sort_keys=True)
    with _lock:
        answer = _answers.get(key)
        failed = answer is not None and answer.done() and answer.exception() is not None
        if answer is None or failed and time.monotonic() - answer.asked_at > RETRY_AFTER:
            answer = _answers[key] = _pool.submit(lambda: (read or (lambda a: a))(_ask(what, **kw)))
            answer.asked_at = time.monotonic()
        _answers.move_to_end(key)
        while len(_answers) > ANSWERS:
            _answers.popitem(last=False)
        return answer


PENDING = (
    "Counting each parameterization's built modules and checking the folds in a fresh process (it loads "
    "torch, about 2 s on a small machine): these sections fill in when it answers."
)


def answered(future: Future, within: float) -> bool:
    """Whether the answer is in, waiting at most `within` seconds for it."""
    return not wait([future], timeout=within).not_done


def parameters(names: list[str], size: dict, rows: list[dict], fold: dict) -> Future:
    """Started now, in one child (one torch import for the whole page): the formula and measured parameter count
    per component of each parameterization at `size`, core.attention.registry.count_params for each row
    (attention, d_model, n_heads), and the max abs output difference of both folds at `fold` (d_model, n_heads,
    seed; core.attention.fold.fold_check). result() is (breakdown frame, counts, fold errors), or a one-line
    RuntimeError."""
    read = lambda a: (pd.DataFrame(a["breakdown"]), a["count_params"], a["folds"])  # noqa: E731
    return _asked("parameters", read, names=list(names), size=dict(size), rows=[dict(r) for r in rows], fold=fold)


# ---- the child's side: torch is imported only here ------------------------------------------------------
def _breakdown(names, size):
    from ..training.config import ModelConfig
    from ..training.model import count_model_params, measured_breakdown

    rows = []
    for name in names:
        cfg = ModelConfig(attention=name, **size)
        formula, measured = count_model_params(cfg), measured_breakdown(cfg)
        rows += [{"attention": name, "component": k, "formula": v, "measured": measured[k]} for k, v in formula.items()]
    return rows


def _count_params(rows):
    from ..attention.registry import count_params

    return [count_params(r["attention"], r["d_model"], r["n_heads"]) for r in rows]


def _fold_check(d_model, n_heads, seed):
    from ..attention.fold import fold_check

    return fold_check(d_model, n_heads, seed=seed)


def _parameters(names, size, rows, fold):
    return {"breakdown": _breakdown(names, size), "count_params": _count_params(rows), "folds": _fold_check(**fold)}


if __name__ == "__main__":
    answer = {"parameters": _parameters}[sys.argv[1]]
    print(json.dumps(answer(**json.loads(sys.argv[2]))))
