"""What the criterion protocol still asks of a store: one sweep line per point whose cap must rise (an open cell)
or whose lr grid must widen (a best lr at an end), counted from the store's runs; docs/reproduce.md's Still to run
and `python -m core todo` both read it."""

import math
import re

import pandas as pd

from ..analysis import endpoints, markdown, scaling
from ..analysis.axes import AXES
from ..attention.registry import ATTENTION
from ..experiments import lines
from ..training.config import TrainConfig
from ..training.criterion import hopeless, lr_score

COLUMNS = ["line", "open", "edges", "seeds", "extended", "from_zero", "added", "trained", "job_steps"]
DECIDING_SEEDS = 10  # the protocol's seeds a cell where a threshold is decided (5 elsewhere)


def raise_steps(point: pd.DataFrame, cap: int, steps: int, fresh: int) -> tuple[int, int]:
    """The member-steps a point's line at `steps` (its cap, or twice it) takes at most, counted from its runs:
    extended from their end states (only the members censored at the cap go on), and trained from step 0 (each
    member that stopped before the cap stops where it did, the others run to `steps`); `fresh`, the member-steps of
    the members the point lacks (a new lr or seed: new_steps), are the same in both."""
    at_cap = int((point.stop == "cap").sum())
    return at_cap * (steps - cap) + fresh, at_cap * steps + int(point.stop_step[point.stop != "cap"].sum()) + fresh


def new_steps(own: pd.DataFrame, cap: int, steps: int, n_seeds: int, lrs, eval_every: int) -> int:
    """The member-steps of the members one cell of a line lacks, from step 0: a new seed at a stored lr runs to
    `steps`; a new lr's seeds stop once the rule that stops a hopeless lr rules it out (criterion.hopeless), against
    the cell's lrs that train nothing in the line (every run carried): at step 0 where one of them solved more seeds
    than the new lr has, and where one solved as many, by the time the new lr's seeds have spent that lr's summed
    solve steps S (at an evaluation after which they had not yet: at most S plus an evaluation each)."""
    stored = own.groupby("lr").size()
    seeds = sum(max(0, n_seeds - int(n)) for n in stored)
    settled = stored.index if steps == cap else stored.index.difference(own.lr[own.stop == "cap"].unique())
    finished = [lr_score(_solves(own[own.lr == lr])) for lr in settled if stored[lr] >= n_seeds]
    new = [lr for lr in lrs if not any(math.isclose(lr, old) for old in stored.index)]
    return seeds * steps + len(new) * _new_lr_steps(finished, n_seeds, steps, eval_every)


def _solves(runs: pd.DataFrame) -> list:
    return [None if math.isnan(s) else int(s) for s in runs.solve_step]


def _new_lr_steps(finished: list[tuple], n: int, steps: int, eval_every: int) -> int:
    if hopeless((n, -n * eval_every), finished):  # ruled out at step 0's evaluation
        return 0
    tied = [-score[1] for score in finished if score[0] == n]
    return min(n * steps, min(tied) + n * eval_every) if tied else n * steps


def job_steps(point: pd.DataFrame, cap: int, steps: int, trained, fresh) -> tuple[int, ...]:
    """Each parameterization's job of a point's line (one ensemble, one worker), in the member-steps a scratch store
    trains with `--carry-from` the point's store (which `todo --into` adds): a member censored at the cap from step 0
    to `steps`, and its `fresh` member-steps (new_steps: the members the point lacks); one that stopped before the
    cap is carried, not trained, and so is one censored at it where `steps` is the cap (a wider grid, more seeds).
    In `trained` order; on a CPU a line's slowest job, not its sum, can set its wall time."""
    out = []
    for name, new in zip(trained, fresh):
        censored = (point[point.attention == name].stop == "cap").sum() if steps > cap else 0  # else carried
        out.append(int(censored) * steps + new)
    return tuple(out)


def _row(point, steps: int, trained, n_seeds: int, lrs, stored: pd.DataFrame, cap: int, **why) -> dict:
    """One pending line: `point`'s line at `steps` for `trained` at `n_seeds` seeds over `lrs` (() keeps the line's),
    its member-steps (raise_steps, job_steps) and the runs it adds, with `why` (open, edges, seeds) in words."""
    line = lines.rerun(point, steps, trained, n_seeds, lrs)
    lrs = tuple(lrs or sorted(stored.lr.unique()))
    every = re.search(r"--eval-every (\d+)", line)
    eval_every = int(every.group(1)) if every else TrainConfig.eval_every
    fresh = [new_steps(stored[stored.attention == name], cap, steps, n_seeds, lrs, eval_every) for name in trained]
    extended, from_zero = raise_steps(stored, cap, steps, sum(fresh))
    return {
        "line": line,
        **{k: why.get(k, "") for k in ("open", "edges", "seeds")},
        "extended": extended,
        "from_zero": from_zero,
        "added": max(0, len(trained) * n_seeds * len(lrs) - len(stored)),
        "trained": tuple(trained),
        "job_steps": job_steps(stored, cap, steps, trained, fresh),
    }


def more_seeds(runs: pd.DataFrame, every: pd.DataFrame, skip=()) -> list[dict]:
    """A line per point where a scan's threshold is decided (core.analysis.scaling.deciding) by a cell of fewer
    than DECIDING_SEEDS seeds: that point at its cap, for those parameterizations, at DECIDING_SEEDS seeds. Points
    in `skip` (their point_ids: a line to raise or widen them comes first) wait for it."""
    rows, by_point = [], {}
    order = list(ATTENTION)
    for axis in AXES:
        table = scaling.outcomes(runs, axis)
        if table.empty or not (table.until == "solved").all():  # a fixed-budget scan has no protocol to owe
            continue
        best = scaling.best_runs(runs, axis)
        for cell in scaling.deciding(table, order).itertuples():
            if cell.n >= DECIDING_SEEDS:
                continue
            ids = set(best.run_id[(best.attention == cell.attention) & (best.x == cell.x)])
            for p in every[every.attention == cell.attention].itertuples():
                if not ids.isdisjoint(p.point_ids) and p.point_ids not in skip:
                    by_point.setdefault(p.point_ids, (p, {}))[1][cell.attention] = p.seeds
    for ids, (p, short) in by_point.items():
        names = [n for n in ATTENTION if n in short]
        stored = runs[runs.run_id.isin(ids) & runs.attention.isin(names)]
        why = ", ".join(f"{n} ({short[n]})" for n in names)
        rows.append(_row(p.commands, p.cap, names, DECIDING_SEEDS, (), stored, p.cap, seeds=why))
    return rows


def pending(runs: pd.DataFrame, every: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per point to run again, raises first: its line (lines.rerun: twice its cap where a cell is open,
    its lrs one step wider at each end holding a best lr), its open and edge cells in words, its member-steps
    extended and from step 0 (raise_steps), and the runs it adds once landed (a raised run replaces its own).
    `every`: endpoints.cells(runs), where the caller has it."""
    every = endpoints.cells(runs) if every is None else every
    cells = every[every.open | every.at_an_end].sort_values("open", ascending=False, kind="stable")
    rows = []
    keys = ["commands", "cap", "trained", "point_seeds", "point_lrs", "point_ids"]
    for (point, cap, trained, seeds, lrs, ids), g in cells.groupby(keys, sort=False):
        g = g.sort_values("attention", key=lambda a: a.map(list(ATTENTION).index))
        wider = lines.beyond_edges(lrs, set(g.lr[g.at_an_end]))
        steps = 2 * int(cap) if g.open.any() else int(cap)
        opened = ", ".join(f"{r.attention} ({r.improving} of {r.censored})" for r in g[g.open].itertuples())
        edges = ", ".join(f"{r.attention} ({r.lr:g})" for r in g[g.at_an_end].itertuples())
        stored = runs[runs.run_id.isin(ids)]
        wider = wider if wider != lrs else ()  # the line's own lrs, as it wrote them
        rows.append(_row(point, steps, trained, seeds, wider, stored, int(cap), open=opened, edges=edges))
    rows += more_seeds(runs, every, skip=set(cells.point_ids))
    return pd.DataFrame(rows, columns=COLUMNS)


def _longest(trained, steps) -> str:
    most = max(range(len(steps)), key=steps.__getitem__)
    return f"{steps[most]:,} ({trained[most]})"


def section(runs: pd.DataFrame, per_run: float | None = None) -> list[str]:
    """docs/reproduce.md's Still to run: the pending lines as a table."""
    every = endpoints.cells(runs)
    n_open, n_edge = int(every.open.sum()), int(every.at_an_end.sum())
    todo = pending(runs, every)
    table = pd.DataFrame(
        {
            "longest job: member-steps from step 0": [_longest(t, j) for t, j in zip(todo.trained, todo.job_steps)],
            "command": [f"`{line}`" for line in todo.line],
            "open cells (improving of censored at the cap)": todo.open,
            "best lr at an end of the grid": todo.edges,
            f"a threshold decided at fewer than {DECIDING_SEEDS} seeds": todo.seeds,
            "member-steps: extended · from step 0": [f"{e:,} · {z:,}" for e, z in zip(todo.extended, todo.from_zero)],
            "runs added": [f"{n:,}" for n in todo.added],
        }
    )
    return [
        "## Still to run",
        "",
        "Why a line is here (the table's middle columns):",
        "",
        f"- **Open cells.** {n_open} cells are open: more than a tenth of their censored seeds were still improving at "
        "the cap (`core.analysis.endpoints.open_cells`). The line is the one that made the point, at twice its cap, "
        "for every parameterization there (a point is read at one cap).",
        f"- **Best lr at an end.** {n_edge} cells have their best lr at an end of their point's lrs "
        "(`core.analysis.endpoints.edge_cells`): their optimum may lie outside the grid, so the line widens the grid "
        "one lr that way (the 1-3-10 ladder) for the whole point, at its cap. Only the new lr trains; the stored runs "
        "are skipped and count towards the rule that stops a hopeless lr.",
        f"- **A threshold decided at fewer than {DECIDING_SEEDS} seeds.** Where a scan's threshold against `standard` "
        "is decided at a point (the setting where the two part, `core.analysis.scaling.deciding`) by a cell of fewer "
        f"than {DECIDING_SEEDS} seeds, the line is the point's at its own cap, for the parameterizations deciding "
        f"there, at {DECIDING_SEEDS} seeds, once no cell of the point is open or at an end. Only the new seeds train: "
        "`--carry-from data` carries every run of the point's own cap.",
        "",
        "What a line trains (the member-step columns, counted from `data/`'s runs by core/report/pending.py; the line "
        "with `--dry-run` and your scratch store says the same before anything trains):",
        "",
        "- In the scratch store that trained the point, it extends each member from its saved end state; a member "
        "that stopped before the old cap is stored again as it was.",
        "- Elsewhere it trains them from step 0: the same runs, as the schedule does not depend on the cap, up to "
        "float rounding, which at a high lr can grow into another outcome (see the top of this page). With "
        "`--carry-from data`, the runs `data/` holds that stopped before the old cap (and, at the point's own cap, "
        "every run it holds) are carried over, not trained again.",
        "- A new seed runs to the new cap; a new lr runs until the rule that stops a hopeless lr can rule it out "
        "against the lrs of its cell that train nothing (`core.report.pending.new_steps`).",
        "- A line's jobs (one per parameterization: one ensemble, one worker) run side by side, so on a CPU its "
        "longest job, not the sum, can set its wall time: the first column gives it in member-steps from step 0 "
        "with `--carry-from data` (`core.report.pending.job_steps`).",
        "- Runs added: its new lrs' and seeds' (a raised run replaces the shorter one"
        + (f"; each about {per_run:.1f} kB of a pack" if per_run else "")
        + ").",
        "",
        "Running a line (docs/cli.md has the session loop):",
        "",
        "1. `python -m core todo --into SCRATCH` prints these lines, one per line, for that store, with "
        "`--carry-from` the store it read (`--device cuda --workers 4` on a GPU); `todo --hours H` times each job's "
        "steps on this machine and keeps the lines that fit.",
        "2. A scratch store is not sure to outlast its session (one was gone at the next). A job longer than a "
        "session runs a part of its lrs at a time (`sweep ... --part K/N`, every seed), and `sweep ... --hours H` "
        "starts only the jobs that can end within H hours, leaving the others for the next session (exit status "
        "75), so no core spends a session's last hour on a job that a SIGTERM loses.",
        '3. Between sessions, `python -m core park "<line>" --from SCRATCH` copies the runs it stored into '
        '`data/parked/` to commit, and `park "<line>" --into SCRATCH` writes them back on the next machine.',
        "",
        "Landing a finished line:",
        "",
        "1. Append the line to the end of `RAISES` (core/experiments/raises.py, the end of `CRITERION_SWEEPS`) with "
        "a comment saying why it ran.",
        '2. `python -m core land "<line>" --from SCRATCH`. A line that raises a point\'s cap holds every '
        "parameterization of the point (a point is read at one cap): `land` refuses one that would leave some "
        "behind.",
        '3. The commands of "Then, once the sweeps are in" below, from `prune` on.',
        "",
        markdown.table(table) if len(todo) else "None.",
        "",
        *(
            [
                f"In all, {todo.extended.sum():,} member-steps extended, {todo.from_zero.sum():,} from step 0 "
                "(`python -m core todo --at-most N` prints only the lines of at most N from step 0).",
                "",
            ]
            if len(todo)
            else []
        ),
    ]
