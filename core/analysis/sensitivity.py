"""How fragile a cell's answer is to its lr: how many lrs of its grid solve (the rules are findings')."""

import pandas as pd

from . import findings


def lr_sensitivity(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: how many lrs of its grid solve at least ROBUST (findings) of their seeds (`lrs_solving` of `lrs`), and
    each lr's solved k/n in `per_lr` ("3e-3: 1/10, 1e-3: 10/10"): a parameterization that solves only at one
    lr is fragile where one that solves at three is not, whatever their best-lr verdicts say. Under the
    criterion an lr that could no longer be chosen stopped early (pruned): its count is a lower bound, said
    as "k/n (pruned by step S)", and `lrs_pruned` counts such lrs."""
    if runs.empty:
        return pd.DataFrame(columns=[*findings.CELL, "lrs", "lrs_solving", "lrs_pruned", "per_lr"])
    pruned = runs.get("stop", pd.Series("cap", index=runs.index)) == "pruned"
    stop = runs.get("stop_step", runs.steps).where(pruned)
    df = runs.assign(_solved=findings.solved(runs), _pruned=pruned, _stop=stop)
    keys = findings.cell_keys(df)
    per = df.groupby([*keys, "lr"], dropna=False).agg(
        k=("_solved", "sum"), n=("_solved", "count"), pruned=("_pruned", "sum"), by=("_stop", "max")
    )
    rows = []
    for key, g in per.reset_index().groupby(keys, dropna=False, sort=False):
        g = g.sort_values("lr")
        rows.append(
            {
                **dict(zip(keys, key)),
                "lrs": len(g),
                "lrs_solving": int((g.k >= findings.ROBUST * g.n).sum()),
                "lrs_pruned": int((g.pruned > 0).sum()),
                "per_lr": ", ".join(
                    f"{r.lr:g}: {int(r.k)}/{r.n}" + (f" (pruned by step {int(r.by):,})" if r.pruned else "")
                    for r in g.itertuples()
                ),
            }
        )
    return pd.DataFrame(rows)
