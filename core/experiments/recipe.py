"""The lab's recipe: every command behind data/, in the order they ran, and what runs after them.

docs/reproduce.md is generated from it (core/report/) and tests/test_bundled.py checks data/ against it; a
stored file's own record of what made it is core.results.provenance; core.experiments.lines matches a recorded
command to its line and writes the line that raises or widens a point.
"""

from .raises import RAISES
from .recipe_parts import (
    CRITERION,
    CRITERION_SCAN,
    DOWN,
    EASY,
    EXTENDED_SCAN,
    INDUCTION_SCAN,
    NO_IDENTITY,
    TEN_SEEDS,
    UP,
    capped,
    extended,
    induction_scan,
)

# every task at the bundled point under the criterion, in one command: what the app offers to fill an empty store
# with (data/ ran it as CRITERION_SWEEPS' task lines, some at a raised cap)
FIRST_SWEEP = (
    "python -m core sweep --attention all --task all --seeds 5 --lr grid --until solved --steps 6400 --eval-every 50 "
    "--store data"
)
# Every sweep behind data/, each trained to the criterion (docs/cli.md: Training to a criterion) in a scratch store and
# copied here with its record: each task's bundled point, induction's one-layer control (first each parameterization
# at the lr chosen for its two-layer cell, then its own grid), and the scans one axis point at a time:
# first each point's first training and the raises made with it, then RAISES (core/experiments/raises.py), the
# points raised or widened one at a time after them.
CRITERION_SWEEPS = (
    # induction's cap is 12,800: at 6,400 identity's and tied_qkv's censored seeds were still improving. The 6,400
    # grid's saved end states were lost with a machine, so the grid was trained again to 12,800 (the schedule does
    # not depend on the cap, so this is the run an extension would have made)
    "python -m core sweep --attention all --task induction --seeds 5 --lr grid --until solved --steps 12800 "
    "--eval-every 50 --store data --workers 2 --quiet",
    # identity's best lr there was the grid's highest (1e-2): the grid one step up (3e-2) for the whole point; the
    # runs of the four grid lrs are skipped as stored, and count towards the rule that stops a hopeless lr
    "python -m core sweep --attention all --task induction --seeds 5 --lr 0.0003,0.001,0.003,0.01,0.03 --until solved "
    "--steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    f"python -m core sweep --attention all --task associative_recall --seeds 5 --lr grid {CRITERION}",
    # identity's censored seeds were all still improving at 6,400: the cap raised by extension (every other
    # member re-stored as it stopped, from its saved end state); these are the runs data/ keeps
    "python -m core sweep --attention all --task associative_recall --seeds 5 --lr grid --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    # then seeds 5-9 of that task, straight to 12,800 (seeds 0-4 count towards its lr-stopping rule): 10 a cell
    "python -m core sweep --attention all --task associative_recall --seeds 10 --lr grid --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    # the scans, retrained to the criterion one axis point at a time (identity has no d_head of its own); each
    # replaced that point's fixed-budget scan
    *(f"{CRITERION_SCAN} {NO_IDENTITY} --d-head {d}" for d in (8, 4)),
    f"{CRITERION_SCAN} --attention all --d-model 32",
    f"{CRITERION_SCAN} --attention all --n-heads 1",
    f"{EXTENDED_SCAN} --attention all --n-heads 8",
    f"{CRITERION_SCAN} --attention all --n-heads 2",
    f"{CRITERION_SCAN} --attention all --length 4",
    f"{CRITERION_SCAN} --attention all --d-model 16",
    # its open cells (most seeds still improving at 6,400) to 12,800: the same command at the higher cap, in the
    # same scratch store, extending every member from its saved end state
    f"{capped(CRITERION_SCAN, 12800)} --attention all --d-model 16",
    f"{CRITERION_SCAN} --attention all --n-heads 8",
    f"{EXTENDED_SCAN} {NO_IDENTITY} --d-head 4",
    f"{EXTENDED_SCAN} {NO_IDENTITY} --d-head 8",
    *(f"python -m core sweep --attention all --task {t} --seeds 5 --lr grid {CRITERION}" for t in EASY),
    f"python -m core sweep --attention standard,bilinear,mqa,gqa --task induction --seeds 5 --lr 0.003 --n-layers 1 "
    f"{CRITERION}",
    f"python -m core sweep --attention stacked,tied_qk --task induction --seeds 5 --lr 0.001 --n-layers 1 {CRITERION}",
    f"python -m core sweep --attention tied_qkv --task induction --seeds 5 --lr 0.0003 --n-layers 1 {CRITERION}",
    f"python -m core sweep --attention identity --task induction --seeds 5 --lr 0.01 --n-layers 1 {CRITERION}",
    # the control at its own lr grid (the four lines above trained its two-layer lrs; the grid skips those runs)
    f"python -m core sweep --attention all --task induction --seeds 5 --lr grid --n-layers 1 {CRITERION}",
    # its open cells to 12,800 (tied_qk, tied_qkv, mqa: seeds still improving at 6,400), then the rest of the grid
    # there, so the whole control reads one cap; each member went on from its saved end state, except the runs at
    # the two-layer lrs (trained before end states were kept), which were trained again from step 0
    "python -m core sweep --attention tied_qk,tied_qkv,mqa --task induction --seeds 5 --lr grid --n-layers 1 "
    "--until solved --steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    "python -m core sweep --attention all --task induction --seeds 5 --lr grid --n-layers 1 --until solved "
    "--steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    # trained on a lent GPU (docs/reproduce.md counts their runs): d_head 2, and the first induction n_heads point
    f"{CRITERION_SCAN} {NO_IDENTITY} --d-head 2",
    f"{INDUCTION_SCAN} --attention all --n-heads 8",
    f"{INDUCTION_SCAN} --attention all --n-heads 2",
    # d_head 4's lr grid one step down for the whole point (tied_qk's best lr, 3e-4, was its lowest); the stored runs
    # of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{extended(DOWN)} {NO_IDENTITY} --d-head 4",
    f"{INDUCTION_SCAN} --attention all --n-heads 1",
    f"{CRITERION_SCAN} --attention all --d-model 128",
    # d_model 32's open cells (tied_qkv's and identity's seeds still improving at 6,400) to 12,800 by extension, and
    # the grid one step up (3e-2) for the whole point, since identity's best lr there was the highest (1e-2)
    f"{extended(UP)} --attention all --d-model 32",
    # d_head 8's grid one step down for the whole point (tied_qkv's best lr, 3e-4, where it stops solving, was its
    # lowest); the stored runs of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{extended(DOWN)} {NO_IDENTITY} --d-head 8",
    # n_heads 8's grid one step down for the whole point (tied_qkv's best lr, 3e-4, where it stops solving, was its
    # lowest); the stored runs of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{extended(DOWN)} --attention all --n-heads 8",
    # d_head 2's mqa and gqa (a point of their own: their n_kv_heads) to 12,800, where 2 of 5 censored seeds of each
    # were still improving at 6,400: trained from step 0 on this CPU (the end states stayed on the lent GPU), so the
    # first 6,400 steps of each member are also the GPU's runs, trained again
    f"{capped(CRITERION_SCAN, 12800)} --attention mqa,gqa --d-head 2",
    # ten seeds where a threshold was decided by five: d_model 16's standard and bilinear (1/5 against 4/5 made
    # "bilinear needs 16 where standard needs 32"), then d_head 2's tied_qk and tied_qkv (0/5 against standard's 4/5
    # made two d_head thresholds); seeds 0-4 are the stored runs, skipped, so each line trains seeds 5-9 at its cap
    f"{capped(TEN_SEEDS, 12800)} --attention standard,bilinear --d-model 16",
    f"{TEN_SEEDS} --attention tied_qk,tied_qkv --d-head 2",
    # the reference's seeds 5-9 there, against which those two and the shared-key-value pair are tested, then the
    # shared-key-value pair's at the cap their point was read at
    f"{TEN_SEEDS} --attention standard --d-head 2",
    f"{capped(TEN_SEEDS, 12800)} --attention mqa,gqa --d-head 2",
    # 4 pairs' open cell (identity's censored seeds all still improving at 6,400) to 12,800: every member of the
    # point trained again from step 0, as the scratch store holding their 6,400 end states is gone (the same runs:
    # the schedule does not depend on the cap)
    f"{capped(CRITERION_SCAN, 12800)} --attention all --length 4",
    # induction with two heads, the same (tied_qkv: 1 of 5 censored seeds still improving at 6,400); two sweeps of
    # this line on one core each shared its jobs through their claims
    f"{induction_scan(12800)} --attention all --n-heads 2",
    # 4 pairs to 25,600 (identity: its 2 censored seeds still improving at 12,800), each member going on from its
    # 12,800 end state in the scratch store that trained it
    f"{capped(CRITERION_SCAN, 25600)} --attention all --length 4",
    # induction with two heads, the same (tied_qkv: 1 of 4 censored seeds still improving at 12,800); two sweeps of
    # this line on one core each shared its jobs through their claims
    f"{induction_scan(25600)} --attention all --n-heads 2",
    # d_head 2's mqa and gqa to 25,600 (5 and 4 of their 10 censored seeds still improving at 12,800), each member
    # going on from its 12,800 end state; killed parts went on from checkpoints across sessions and wrote no record
    f"{capped(TEN_SEEDS, 25600)} --attention mqa,gqa --d-head 2",
    # d_head 2's other five to 12,800 (standard's and stacked's one censored seed, 4 of tied_qk's 10 censored seeds
    # and 7 of tied_qkv's 10 still improving at 6,400), ten seeds each: seeds 5-9 of standard, tied_qk and tied_qkv
    # went on from their 6,400 end states in the scratch store, the rest trained from step 0 on this CPU (seeds 0-4's
    # 6,400 end states stayed on the lent GPU; stacked's and bilinear's seeds 5-9 are new)
    f"{capped(TEN_SEEDS, 12800)} --attention standard,stacked,bilinear,tied_qk,tied_qkv --d-head 2",
    # induction with eight heads to 12,800 (tied_qkv: 3 of 3 censored seeds, identity: 3 of 5 still improving at
    # 6,400): every member trained again from step 0 on this CPU, as the 6,400 end states stayed on the lent GPU;
    # two sweeps of this line on one core each shared its jobs through their claims
    f"{induction_scan(12800)} --attention all --n-heads 8",
    # d_head 2's five to 25,600 (standard's one censored seed, 4 of tied_qk's 10 and 7 of tied_qkv's 10 still
    # improving at 12,800): each member went on from its 12,800 end state in the scratch store; two sweeps of this
    # line on one core each shared its jobs, and parts killed at a session's end went on from checkpoints and wrote
    # no record
    f"{capped(TEN_SEEDS, 25600)} --attention standard,stacked,bilinear,tied_qk,tied_qkv --d-head 2",
    *RAISES,
)
# after the sweeps: what the pages read besides the runs, and the documents made from them
AFTER_SWEEPS = (
    "python -m core prune --store data --superseded --max-seeds 2 --max-model-seeds 1 --model-tasks induction   "
    "# a raised cap's runs replace the shorter ones; weights of the best lr's seeds",
    "python -m core baselines --store data   # matched baselines, final-weight analyses, solve steps",
    "python -m core index --store data --slim   # compact run files; curves thinned past 16 evaluations",
    "python -m core pack --store data   # loose run files (a sweep run with --store data) into a pack",
    "python -m core pretrained --store data",
    "python -m core bench --store data --skip-attention --training-rounds 3",
    "python -m core bench --store data --criterion --skip-attention --skip-training --skip-precision --skip-store "
    "--skip-blas   # about an hour: the criterion protocol against the fixed budget",
    "python -m core report --store data   # docs/results.md and docs/reproduce.md",
)
