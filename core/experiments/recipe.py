"""The lab's recipe: every command behind data/, in the order they ran, and what runs after them.

docs/reproduce.md is generated from it (core/report/) and tests/test_bundled.py checks data/ against it; a
stored file's own record of what made it is core.results.provenance; core.experiments.lines matches a recorded
command to its line and writes the line that raises or widens a point.
"""

# every task at the bundled point under the criterion, in one command: what the app offers to fill an empty store
# with (data/ ran it as CRITERION_SWEEPS' task lines, some at a raised cap)
FIRST_SWEEP = (
    "python -m core sweep --attention all --task all --seeds 5 --lr grid --until solved --steps 6400 --eval-every 50 "
    "--store data"
)
# Every sweep behind data/, each trained to the criterion (docs/cli.md: Training to a criterion) in a scratch store and
# copied here with its record: each task's bundled point, induction's one-layer control (first each parameterization
# at the lr chosen for its two-layer cell, then its own grid), and the scans one axis point at a time.
_CRITERION = "--until solved --steps 6400 --eval-every 50 --store data --workers 2 --quiet"
_CRITERION_SCAN = (
    "python -m core sweep --task associative_recall --seeds 5 --lr grid --until solved --eval-every 50 --store data "
    "--workers 2 --quiet --steps 6400"
)
# induction's n_heads scan, around its bundled point (core.analysis.axes: n_heads_induction)
_INDUCTION_SCAN = _CRITERION_SCAN.replace("--task associative_recall", "--task induction")
# a scan point whose open cells (censored seeds still improving at 6,400) had their cap raised: the same command
# at --steps 12800 in the same scratch store, which extends every member from its saved end state
_EXTENDED_SCAN = (
    "python -m core sweep --task associative_recall --seeds 5 --lr grid --until solved --eval-every 50 --workers 2 "
    "--quiet --steps 12800 --store data"
)
_TEN_SEEDS = _CRITERION_SCAN.replace("--seeds 5", "--seeds 10")  # where a threshold is decided
_NO_IDENTITY = "--attention standard,stacked,bilinear,tied_qk,tied_qkv,mqa,gqa"  # identity has no d_head
_EASY = ("reverse", "sort", "histogram")  # every parameterization solves them: a check that tying costs nothing there
_UP = "0.0003,0.001,0.003,0.01,0.03"  # the grid one lr wider at its top
_DOWN = "0.0001,0.0003,0.001,0.003,0.01"  # and at its bottom


def _extended(lrs: str, cap: int = 12800) -> str:
    """_EXTENDED_SCAN over these lrs (a widened grid) at this cap."""
    return _EXTENDED_SCAN.replace("--lr grid", f"--lr {lrs}").replace("12800", str(cap))


def _capped(scan: str, cap: int) -> str:
    """A 6,400-step scan line (_CRITERION_SCAN, _TEN_SEEDS, _INDUCTION_SCAN) at a raised cap."""
    return scan.replace("--steps 6400", f"--steps {cap}")


def _induction(cap: int, lrs: str = "grid") -> str:
    """_INDUCTION_SCAN at this cap, over these lrs (a widened grid) or the default grid."""
    return _capped(_INDUCTION_SCAN, cap).replace("--lr grid", f"--lr {lrs}")


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
    f"python -m core sweep --attention all --task associative_recall --seeds 5 --lr grid {_CRITERION}",
    # identity's censored seeds were all still improving at 6,400: the cap raised by extension (every other
    # member re-stored as it stopped, from its saved end state); these are the runs data/ keeps
    "python -m core sweep --attention all --task associative_recall --seeds 5 --lr grid --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    # then seeds 5-9 of that task, straight to 12,800 (seeds 0-4 count towards its lr-stopping rule): 10 a cell
    "python -m core sweep --attention all --task associative_recall --seeds 10 --lr grid --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    # the scans, retrained to the criterion one axis point at a time (identity has no d_head of its own); each
    # replaced that point's fixed-budget scan
    *(f"{_CRITERION_SCAN} {_NO_IDENTITY} --d-head {d}" for d in (8, 4)),
    f"{_CRITERION_SCAN} --attention all --d-model 32",
    f"{_CRITERION_SCAN} --attention all --n-heads 1",
    f"{_EXTENDED_SCAN} --attention all --n-heads 8",
    f"{_CRITERION_SCAN} --attention all --n-heads 2",
    f"{_CRITERION_SCAN} --attention all --length 4",
    f"{_CRITERION_SCAN} --attention all --d-model 16",
    # its open cells (most seeds still improving at 6,400) to 12,800: the same command at the higher cap, in the
    # same scratch store, extending every member from its saved end state
    f"{_capped(_CRITERION_SCAN, 12800)} --attention all --d-model 16",
    f"{_CRITERION_SCAN} --attention all --n-heads 8",
    f"{_EXTENDED_SCAN} {_NO_IDENTITY} --d-head 4",
    f"{_EXTENDED_SCAN} {_NO_IDENTITY} --d-head 8",
    *(f"python -m core sweep --attention all --task {t} --seeds 5 --lr grid {_CRITERION}" for t in _EASY),
    f"python -m core sweep --attention standard,bilinear,mqa,gqa --task induction --seeds 5 --lr 0.003 --n-layers 1 "
    f"{_CRITERION}",
    f"python -m core sweep --attention stacked,tied_qk --task induction --seeds 5 --lr 0.001 --n-layers 1 {_CRITERION}",
    f"python -m core sweep --attention tied_qkv --task induction --seeds 5 --lr 0.0003 --n-layers 1 {_CRITERION}",
    f"python -m core sweep --attention identity --task induction --seeds 5 --lr 0.01 --n-layers 1 {_CRITERION}",
    # the control at its own lr grid (the four lines above trained its two-layer lrs; the grid skips those runs)
    f"python -m core sweep --attention all --task induction --seeds 5 --lr grid --n-layers 1 {_CRITERION}",
    # its open cells to 12,800 (tied_qk, tied_qkv, mqa: seeds still improving at 6,400), then the rest of the grid
    # there, so the whole control reads one cap; each member went on from its saved end state, except the runs at
    # the two-layer lrs (trained before end states were kept), which were trained again from step 0
    "python -m core sweep --attention tied_qk,tied_qkv,mqa --task induction --seeds 5 --lr grid --n-layers 1 "
    "--until solved --steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    "python -m core sweep --attention all --task induction --seeds 5 --lr grid --n-layers 1 --until solved "
    "--steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    # trained on a lent GPU (docs/reproduce.md counts their runs): d_head 2, and the first induction n_heads point
    f"{_CRITERION_SCAN} {_NO_IDENTITY} --d-head 2",
    f"{_INDUCTION_SCAN} --attention all --n-heads 8",
    f"{_INDUCTION_SCAN} --attention all --n-heads 2",
    # d_head 4's lr grid one step down for the whole point (tied_qk's best lr, 3e-4, was its lowest); the stored runs
    # of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{_extended(_DOWN)} {_NO_IDENTITY} --d-head 4",
    f"{_INDUCTION_SCAN} --attention all --n-heads 1",
    f"{_CRITERION_SCAN} --attention all --d-model 128",
    # d_model 32's open cells (tied_qkv's and identity's seeds still improving at 6,400) to 12,800 by extension, and
    # the grid one step up (3e-2) for the whole point, since identity's best lr there was the highest (1e-2)
    f"{_extended(_UP)} --attention all --d-model 32",
    # d_head 8's grid one step down for the whole point (tied_qkv's best lr, 3e-4, where it stops solving, was its
    # lowest); the stored runs of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{_extended(_DOWN)} {_NO_IDENTITY} --d-head 8",
    # n_heads 8's grid one step down for the whole point (tied_qkv's best lr, 3e-4, where it stops solving, was its
    # lowest); the stored runs of the four grid lrs are skipped and count towards the rule that stops a hopeless lr
    f"{_extended(_DOWN)} --attention all --n-heads 8",
    # d_head 2's mqa and gqa (a point of their own: their n_kv_heads) to 12,800, where 2 of 5 censored seeds of each
    # were still improving at 6,400: trained from step 0 on this CPU (the end states stayed on the lent GPU), so the
    # first 6,400 steps of each member are also the GPU's runs, trained again
    f"{_capped(_CRITERION_SCAN, 12800)} --attention mqa,gqa --d-head 2",
    # ten seeds where a threshold was decided by five: d_model 16's standard and bilinear (1/5 against 4/5 made
    # "bilinear needs 16 where standard needs 32"), then d_head 2's tied_qk and tied_qkv (0/5 against standard's 4/5
    # made two d_head thresholds); seeds 0-4 are the stored runs, skipped, so each line trains seeds 5-9 at its cap
    f"{_capped(_TEN_SEEDS, 12800)} --attention standard,bilinear --d-model 16",
    f"{_TEN_SEEDS} --attention tied_qk,tied_qkv --d-head 2",
    # the reference's seeds 5-9 there, against which those two and the shared-key-value pair are tested, then the
    # shared-key-value pair's at the cap their point was read at
    f"{_TEN_SEEDS} --attention standard --d-head 2",
    f"{_capped(_TEN_SEEDS, 12800)} --attention mqa,gqa --d-head 2",
    # 4 pairs' open cell (identity's censored seeds all still improving at 6,400) to 12,800: every member of the
    # point trained again from step 0, as the scratch store holding their 6,400 end states is gone (the same runs:
    # the schedule does not depend on the cap)
    f"{_capped(_CRITERION_SCAN, 12800)} --attention all --length 4",
    # induction with two heads, the same (tied_qkv: 1 of 5 censored seeds still improving at 6,400); two sweeps of
    # this line on one core each shared its jobs through their claims
    f"{_induction(12800)} --attention all --n-heads 2",
    # 4 pairs to 25,600 (identity: its 2 censored seeds still improving at 12,800), each member going on from its
    # 12,800 end state in the scratch store that trained it
    f"{_capped(_CRITERION_SCAN, 25600)} --attention all --length 4",
    # induction with two heads, the same (tied_qkv: 1 of 4 censored seeds still improving at 12,800); two sweeps of
    # this line on one core each shared its jobs through their claims
    f"{_induction(25600)} --attention all --n-heads 2",
    # d_head 2's mqa and gqa to 25,600 (5 and 4 of their 10 censored seeds still improving at 12,800), each member
    # going on from its 12,800 end state; killed parts went on from checkpoints across sessions and wrote no record
    f"{_capped(_TEN_SEEDS, 25600)} --attention mqa,gqa --d-head 2",
    # d_head 2's other five to 12,800 (standard's and stacked's one censored seed, 4 of tied_qk's 10 censored seeds
    # and 7 of tied_qkv's 10 still improving at 6,400), ten seeds each: seeds 5-9 of standard, tied_qk and tied_qkv
    # went on from their 6,400 end states in the scratch store, the rest trained from step 0 on this CPU (seeds 0-4's
    # 6,400 end states stayed on the lent GPU; stacked's and bilinear's seeds 5-9 are new)
    f"{_capped(_TEN_SEEDS, 12800)} --attention standard,stacked,bilinear,tied_qk,tied_qkv --d-head 2",
    # induction with eight heads to 12,800 (tied_qkv: 3 of 3 censored seeds, identity: 3 of 5 still improving at
    # 6,400): every member trained again from step 0 on this CPU, as the 6,400 end states stayed on the lent GPU;
    # two sweeps of this line on one core each shared its jobs through their claims
    f"{_induction(12800)} --attention all --n-heads 8",
    # d_head 2's five to 25,600 (standard's one censored seed, 4 of tied_qk's 10 and 7 of tied_qkv's 10 still
    # improving at 12,800): each member went on from its 12,800 end state in the scratch store; two sweeps of this
    # line on one core each shared its jobs, and parts killed at a session's end went on from checkpoints and wrote
    # no record
    f"{_capped(_TEN_SEEDS, 25600)} --attention standard,stacked,bilinear,tied_qk,tied_qkv --d-head 2",
    # grids whose end held a cell's best lr, one lr further that way for the whole point at its cap (docs/reproduce.md:
    # Still to run); only the new lr trained, the stored runs were skipped and counted towards the rule that stops a
    # hopeless lr. The bundled associative recall point (tied_qkv's best at 3e-4; ten seeds at 12,800) and induction
    # point (tied_qkv's at 3e-4) one step down
    f"python -m core sweep --attention all --task associative_recall --seeds 10 --lr {_DOWN} --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{_UP} --until solved "
    "--steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    # the same, landed once data/'s runs were packed: reverse (tied_qk's best at 1e-2), sort and histogram
    # (identity's) one step up, then reverse and sort once more, where 3e-2 became tied_qk's and identity's best
    *(
        f"python -m core sweep --attention all --task {task} --seeds 5 --lr {lrs} --until solved --steps 6400 "
        "--eval-every 50 --store data --workers 2 --quiet"
        for task, lrs in (
            ("reverse", _UP),
            ("sort", _UP),
            ("histogram", _UP),
            ("reverse", f"{_UP},0.1"),
            ("sort", f"{_UP},0.1"),
        )
    ),
    # n_heads 1 (tied_qk's best at 3e-4) and d_model 128 (stacked's and tied_qkv's) one step down
    *(
        f"python -m core sweep --task associative_recall --seeds 5 --lr {_DOWN} --until solved --eval-every 50 "
        f"--store data --workers 2 --quiet --steps 6400 --attention all --{axis}"
        for axis in ("n-heads 1", "d-model 128")
    ),
    # d_head 8 to 25,600 (tied_qkv: its censored seeds still improving at 12,800), every member from step 0 (the
    # 12,800 end states were lost with a machine): mqa's and gqa's jobs on a lent H100, the other five on this CPU,
    # two sweeps on a core each sharing the jobs through their claims
    f"{_extended(_DOWN, 25600)} {_NO_IDENTITY} --d-head 8",
    # d_head 8 to 51,200 (tied_qkv: 4 of 4 censored seeds still improving at 25,600): tied_qk's and tied_qkv's
    # censored members went on from their 25,600 end states in the scratch store, mqa and gqa (whose end states
    # stayed on the lent GPU) trained again from step 0, on this CPU; two sweeps on a core each shared the jobs, and
    # tied_qkv's, restarted from its checkpoint on both cores once the others were done, wrote no record before that
    f"{_extended(_DOWN, 51200)} {_NO_IDENTITY} --d-head 8",
    # d_head 8's grid one step further down (3e-5) for the whole point, since tied_qk's best lr at 51,200 (1e-4) was
    # the lowest; the stored runs of the other lrs are skipped. On this CPU, two sweeps on a core each; the parts
    # they ran in the session before (standard's, stacked's and bilinear's new members, and the first 3,000 or so
    # steps of tied_qk's and tied_qkv's) were killed at its end and wrote no record
    f"{_extended(f'3e-05,{_DOWN}', 51200)} {_NO_IDENTITY} --d-head 8",
    # 16 key-value pairs, trained on a lent H100 (--device cuda --workers 4: 4 min 15 s for its 160 members; on the
    # 2-core CPU every member that does not solve runs to the cap, an estimated 6.5 hours)
    f"{_CRITERION_SCAN} --attention all --length 16",
    # d_model 32 to 25,600 (tied_qkv's and identity's censored seeds still improving at 12,800, 2 of 5 and 5 of 5), in
    # a scratch store with --carry-from data: the members data/ held stopped before 12,800 were carried over, and
    # tied_qkv's and identity's 25 each trained from step 0 on this CPU (the 12,800 end states were lost with a
    # machine), going on from their checkpoints across four starts, three of them stopped at a session's end
    f"{_extended(_UP, 25600)} --attention all --d-model 32",
    # d_model 32 to 51,200 (tied_qkv: 1 of 5 censored seeds still improving at 25,600): tied_qkv's and identity's
    # members went on from their 25,600 end states in the same scratch store on this CPU, across two starts (the
    # first stopped at a session's end), the other six carried
    f"{_extended(_UP, 51200)} --attention all --d-model 32",
    # d_model 32 to 102,400 (tied_qkv: 1 of 5 censored seeds still improving at 51,200): tied_qkv's and identity's
    # members went on from their 51,200 end states in the same scratch store on this CPU, across three starts (the
    # first two were killed, one at a session's end, and wrote no record), the other six carried
    f"{_extended(_UP, 102400)} --attention all --d-model 32",
    # the bundled induction point to 25,600 (identity: its 5 censored seeds at the best lr all still improving at
    # 12,800): identity's 30 members trained again from step 0 on this CPU (data/ keeps no end states), in a scratch
    # store with --carry-from data, which carried the other seven's members (each stopped before 12,800) with the
    # weights and models data/ kept of them; two starts, the first stopped by SIGTERM after its first checkpoint
    # to give the job both cores
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{_UP} --until solved "
    "--steps 25600 --eval-every 50 --store data --workers 2 --quiet",
    # the bundled induction point to 51,200 (identity: 1 of 5 seeds solved at 25,600, the other 4 still improving):
    # identity's 29 censored members went on from their 25,600 end states in the same scratch store on this CPU in
    # one start, the other seven's members carried with their weights and models
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{_UP} --until solved "
    "--steps 51200 --eval-every 50 --store data --workers 2 --quiet",
    # the bundled induction point to 102,400 (identity: 1 of its 2 unsolved seeds at the best lr still improving at
    # 51,200): identity's 24 censored members went on from their 51,200 end states (their lineage records copied
    # into a fresh scratch store) on this CPU in two starts, the first stopped at a session's end; the other seven's
    # members carried with their weights and models
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{_UP} --until solved "
    "--steps 102400 --eval-every 50 --store data --workers 2 --quiet",
    # the one-layer control to 25,600 (in 6 of its 8 cells censored seeds were still improving at 12,800): every
    # member trained again from step 0 on this CPU (data/ keeps no end states, and none had stopped before 12,800 for
    # --carry-from data to carry), in a scratch store across several starts, each going on from its checkpoints
    "python -m core sweep --attention all --task induction --seeds 5 --lr grid --n-layers 1 --until solved "
    "--steps 25600 --eval-every 50 --store data --workers 2 --quiet",
    # d_head 4 to 25,600 (tied_qk's and tied_qkv's censored seeds still improving at 12,800, 2 of 2 and 2 of 5): their
    # 43 censored members trained again from step 0 on this CPU (data/ keeps no end states), in a scratch store with
    # --carry-from data, which carried every member of the other five (each stopped before 12,800); several starts,
    # each going on from its checkpoints
    f"{_extended(_DOWN, 25600)} {_NO_IDENTITY} --d-head 4",
    # d_head 4 to 51,200 (tied_qk's censored seeds still improving at 25,600, 2 of 2): the 42 censored members went on
    # from their 25,600 end states in the same scratch store on this CPU, across several starts, each going on from
    # its checkpoints
    f"{_extended(_DOWN, 51200)} {_NO_IDENTITY} --d-head 4",
    # 32 key-value pairs, trained on a lent H200 (--device cuda --workers 8, in two parts: 7 min 14 s, cancelled with
    # four jobs done, then 1 min 43 s for the other four from their checkpoints); on the 2-core CPU a 20-member job
    # takes about 2 s a step, up to 28 hours for the line
    f"{_CRITERION_SCAN} --attention all --length 32",
    # induction with eight heads to 25,600 (identity: its 5 censored seeds at the best lr all still improving at
    # 12,800), and the grid one step up (3e-2) for the whole point, since identity's best lr there was the highest
    # (1e-2): on this CPU in a scratch store with --carry-from data, which carried every member that had stopped
    # before 12,800; identity's 20 censored members trained again from step 0 (data/ keeps no end states), and the
    # 3e-2 seeds from step 0, the other seven's stopped as hopeless by 7,600 steps
    f"{_induction(25600, _UP)} --attention all --n-heads 8",
    # associative recall with eight heads to 25,600 (tied_qkv: 4 of 4 censored seeds still improving at 12,800,
    # identity 2 of 5): on this CPU in a scratch store with --carry-from data, which carried every member that had
    # stopped before 12,800; tied_qkv's and identity's censored members trained again from step 0 (data/ keeps no end
    # states), two sweeps on a core each sharing the jobs through their claims, in three parts (the first stopped at a
    # session's end, the second by SIGTERM to give identity's job both cores once tied_qkv's was done), each going on
    # from its checkpoints
    f"{_extended(_DOWN, 25600)} --attention all --n-heads 8",
    # associative recall with eight heads to 51,200 (tied_qkv: 2 of its 4 censored seeds still improving at 25,600):
    # on this CPU in the scratch store of the 25,600 line, each member censored there going on from its end state.
    # tied_qkv's job ran first, alone (the first line: its sweep record; its runs are the second line's); then the
    # whole point, as a point is read at one cap: identity's job over two sessions (the part a session's end stopped
    # wrote no record; the next went on from its checkpoint), the other six parameterizations carried, every member
    # of theirs having stopped before 25,600
    f"{_extended(_DOWN, 51200)} --attention tied_qkv --n-heads 8",
    f"{_extended(_DOWN, 51200)} --attention all --n-heads 8",
    # induction with eight heads to 51,200 (identity: 4 of its 5 censored seeds at the best lr still improving at
    # 25,600): on this CPU in a scratch store with --carry-from data; identity's 25 members went on from their 25,600
    # end states, its job in three parts over two sessions (the first stopped by a session's end, which wrote no
    # record; the second by SIGTERM, to give it one core beside another sweep), each going on from its checkpoint; the
    # other seven parameterizations carried, every member of theirs having stopped before 25,600
    f"{_induction(51200, _UP)} --attention all --n-heads 8",
    # 16 key-value pairs to 12,800 (tied_qkv: 3 of its 5 censored seeds still improving at 6,400, identity 5 of 5), and
    # the grid one step down (1e-4) for the whole point, since stacked's and tied_qk's best lr there (3e-4) was the
    # lowest: on this CPU in a scratch store with --carry-from data, which carried every member that had stopped
    # before 6,400; tied_qkv's and identity's 25 members each trained from step 0 (their 6,400 end states stayed on the
    # lent H100), two sweeps on a core each sharing the jobs through their claims (a third took mqa's and gqa's 1e-4
    # seeds), in parts over two sessions (a session's end stopped the first, which wrote no record), each going on
    # from its checkpoint; the 1e-4 seeds of the six others (not tied_qkv's or identity's) were stopped as hopeless
    f"{_extended(_DOWN)} --attention all --length 16",
    # 16 key-value pairs to 25,600 (tied_qkv: 2 of 2 censored seeds still improving at 12,800, identity 1 of 1): on
    # this CPU in the scratch store of the 12,800 line, tied_qkv's 22 and identity's 20 censored members going on from
    # their 12,800 end states, the other six parameterizations carried, every member of theirs having stopped before
    # 12,800; two sweeps on a core each until identity's job was done, then tied_qkv's job alone on both cores over two
    # sessions (SIGTERM before the first session's end wrote its part's record), each part going on from its checkpoint
    f"{_extended(_DOWN, 25600)} --attention all --length 16",
    # induction with eight heads to 102,400 (identity: 1 of its 1 censored seed at the best lr still improving at
    # 51,200): on this CPU in the scratch store of the 51,200 line, identity's 21 members censored there going on from
    # their end states, on one core beside another sweep in two parts over two sessions (SIGTERM before the first
    # session's end wrote its part's record; the second went on from its checkpoint); the other seven
    # parameterizations carried, every member of theirs having stopped before 51,200
    f"{_induction(102400, _UP)} --attention all --n-heads 8",
    # 16 key-value pairs to 51,200 (tied_qkv: 2 of its 2 censored seeds at the best lr still improving at 25,600): on
    # this CPU in the scratch store of the 25,600 line, tied_qkv's 21 members censored there going on from their end
    # states, the other seven parameterizations carried, every member of theirs having stopped before 25,600; in five
    # parts over two sessions (each stopped by SIGTERM, which wrote its record, to move between one core and two
    # beside another sweep, or before a session's end), each going on from its checkpoint
    f"{_extended(_DOWN, 51200)} --attention all --length 16",
    # 16 key-value pairs' grid one step further down (3e-5) for the whole point, since tied_qkv's best lr at 51,200
    # (1e-4) was the lowest; the stored runs of the other lrs carried from data/, so only 3e-5 trained, from step 0.
    # On a lent H200 (--device cuda --workers 8: 5 min 24 s for its 40 members; a CPU sweep of the same line, stopped
    # when this one was done, had reached step 14,000 of tied_qkv's job in 84 minutes)
    f"{_extended(f'3e-05,{_DOWN}', 51200)} --attention all --length 16",
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
