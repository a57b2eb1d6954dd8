"""Recipe lines as commands: which line of core.experiments.recipe a recorded command ran (documented), and the line
that raises an open point's cap or widens its grid (raised, rerun, beyond_edges). The recipe holds the lines; this
reads and writes them, so the recipe can grow by a line per landed sweep without growing any logic.
"""

import math
import re

from ..attention import NAMES
from .recipe import CRITERION_SWEEPS


def scan_command(command: str) -> str:
    """A recorded command as it is compared: its --store replaced by data (where its runs were copied), and the
    engine's flags (--device, --workers, --ray, --carry-from, --part, --hours, --quiet) set aside: they decide where,
    how many jobs at once, what is trained again, which part of the line trains now (and by when) and how loudly,
    not which runs (a run's id holds none of them), so a sweep run on a GPU, or a part of a line, stores its line's
    runs."""
    return _ENGINE.sub("", re.sub(r"--store \S+", "--store data", command))


def line_key(command: str) -> str:
    """A recorded command or recipe line as two are matched: its scan_command with its flags sorted."""
    return _flags_sorted(scan_command(command))


def documented(command: str) -> str:
    """The recipe line a recorded command ran (its flags in any order), or its scan_command where no line matches."""
    return _LINES.get(line_key(command), scan_command(command))


def _flags_sorted(scanned: str) -> str:
    """A scan_command with its flags sorted: argparse reads them in any order, so two orders run the same runs (a
    sweep run by hand on a lent GPU named d_head 8's flags in another order than its recipe line)."""
    head, *flags = re.split(r" (?=--)", scanned)
    return " ".join([head, *sorted(flags)])


def raised(commands, cap: int, attention=(), seeds: int | None = None, lrs=()) -> str:
    """The line that raises an open point's cap: rerun at twice `cap`. A point is read at one cap, so its closed
    cells go on too (a member that stopped before the old cap is stored again as it was). In the scratch store that
    trained the point it extends each member from its saved end state; elsewhere it trains them from step 0 to the
    new cap, the same runs (the schedule does not depend on the cap)."""
    return rerun(commands, 2 * cap, attention, seeds, lrs)


def rerun(commands, steps: int, attention=(), seeds: int | None = None, lrs=()) -> str:
    """The latest recipe line (in run order) of a point's recorded `commands`, at `steps`, for every
    parameterization trained there (`attention`, written "all" where it is every one; default the line's own) at
    its most seeds (`seeds`): a later line may have trained only some of them (more seeds for a few). `lrs`, where
    given, replace the line's (beyond_edges); at the point's own cap only they train, the stored runs are skipped."""
    line = max((documented(c) for c in commands), key=lambda c: _ORDER.get(c, -1))
    line = re.sub(r"--steps \d+", f"--steps {steps}", line)
    if attention:
        names = "all" if set(attention) == set(NAMES) else ",".join(attention)
        line = re.sub(r"--attention \S+", f"--attention {names}", line)
    if lrs:
        line = re.sub(r"--lr \S+", "--lr " + ",".join(f"{v:g}" for v in lrs), line)
    return re.sub(r"--seeds \d+", f"--seeds {seeds}", line) if seeds else line


def beyond_edges(lrs, best) -> tuple[float, ...]:
    """A point's lrs (ascending) one step further out on the 1-3-10 ladder at each end that one of the `best`
    lrs sits at (a cell's best lr at an end of the grid: its optimum may lie outside it, so the grid widens for
    the whole point, as the bundled induction point's did); `lrs` unchanged where none does or only one lr was
    trained."""
    lrs = tuple(sorted(lrs))
    if len(lrs) < 2:
        return lrs
    low, high = (_step(lrs[0], -1),) if lrs[0] in best else (), (_step(lrs[-1], 1),) if lrs[-1] in best else ()
    return (*low, *lrs, *high)


def _step(lr: float, way: int) -> float:
    """The next lr on the 1-3-10 ladder (1e-3, 3e-3, 1e-2, ...) up (way 1) or down (way -1)."""
    exp = math.floor(math.log10(lr) + 1e-9)
    rungs = [m * 10.0**e for e in (exp - 1, exp, exp + 1) for m in (1, 3)]
    at = min(range(len(rungs)), key=lambda i: abs(math.log(rungs[i] / lr)))
    return float(f"{rungs[at + way]:.3g}")


_ENGINE = re.compile(r" --(?:device|workers|ray|carry-from|part|hours) \S+| --quiet\b")
_LINES = {line_key(c): c for c in CRITERION_SWEEPS}
_ORDER = {c: i for i, c in enumerate(CRITERION_SWEEPS)}
