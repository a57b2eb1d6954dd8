"""The pieces the recipe's sweep lines are spelled from (core/experiments/recipe.py, raises.py).

Each line is a whole `python -m core sweep` command as it ran into its scratch store, with `--store data` in place
of that store; these strings only spare the recipe from spelling the common flags out on every line.
"""

CRITERION = "--until solved --steps 6400 --eval-every 50 --store data --workers 2 --quiet"
CRITERION_SCAN = (
    "python -m core sweep --task associative_recall --seeds 5 --lr grid --until solved --eval-every 50 --store data "
    "--workers 2 --quiet --steps 6400"
)
# induction's n_heads scan, around its bundled point (core.analysis.axes: n_heads_induction)
INDUCTION_SCAN = CRITERION_SCAN.replace("--task associative_recall", "--task induction")
# a scan point whose open cells (censored seeds still improving at 6,400) had their cap raised: the same command
# at --steps 12800 in the same scratch store, which extends every member from its saved end state
EXTENDED_SCAN = (
    "python -m core sweep --task associative_recall --seeds 5 --lr grid --until solved --eval-every 50 --workers 2 "
    "--quiet --steps 12800 --store data"
)
TEN_SEEDS = CRITERION_SCAN.replace("--seeds 5", "--seeds 10")  # where a threshold is decided
NO_IDENTITY = "--attention standard,stacked,bilinear,tied_qk,tied_qkv,mqa,gqa"  # identity has no d_head
EASY = ("reverse", "sort", "histogram")  # every parameterization solves them: a check that tying costs nothing there
UP = "0.0003,0.001,0.003,0.01,0.03"  # the grid one lr wider at its top
DOWN = "0.0001,0.0003,0.001,0.003,0.01"  # and at its bottom


def extended(lrs: str, cap: int = 12800) -> str:
    """EXTENDED_SCAN over these lrs (a widened grid) at this cap."""
    return EXTENDED_SCAN.replace("--lr grid", f"--lr {lrs}").replace("12800", str(cap))


def capped(scan: str, cap: int, lrs: str = "grid") -> str:
    """A 6,400-step scan line (CRITERION_SCAN, TEN_SEEDS, INDUCTION_SCAN) at a raised cap, over these lrs (a widened
    grid) or the default grid."""
    return scan.replace("--steps 6400", f"--steps {cap}").replace("--lr grid", f"--lr {lrs}")


def induction_scan(cap: int, lrs: str = "grid") -> str:
    """INDUCTION_SCAN at this cap, over these lrs (a widened grid) or the default grid."""
    return capped(INDUCTION_SCAN, cap, lrs)
