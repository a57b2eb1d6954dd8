"""The recipe's later lines: the points whose cap was raised or whose lr grid was widened one at a time, in the
order they landed (docs/reproduce.md: Still to run says which are still to run and why).

They end CRITERION_SWEEPS (core/experiments/recipe.py); a new line goes at the end of RAISES, with a comment saying
why it ran, before `python -m core land` copies its runs into data/.
"""

from .recipe_parts import CRITERION_SCAN, DOWN, NO_IDENTITY, TEN_SEEDS, UP, capped, extended, induction_scan

RAISES = (
    # grids whose end held a cell's best lr, one lr further that way for the whole point at its cap (docs/reproduce.md:
    # Still to run); only the new lr trained, the stored runs were skipped and counted towards the rule that stops a
    # hopeless lr. The bundled associative recall point (tied_qkv's best at 3e-4; ten seeds at 12,800) and induction
    # point (tied_qkv's at 3e-4) one step down
    f"python -m core sweep --attention all --task associative_recall --seeds 10 --lr {DOWN} --until solved "
    "--eval-every 50 --store data --workers 2 --quiet --steps 12800",
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{UP} --until solved "
    "--steps 12800 --eval-every 50 --store data --workers 2 --quiet",
    # the same, landed once data/'s runs were packed: reverse (tied_qk's best at 1e-2), sort and histogram
    # (identity's) one step up, then reverse and sort once more, where 3e-2 became tied_qk's and identity's best
    *(
        f"python -m core sweep --attention all --task {task} --seeds 5 --lr {lrs} --until solved --steps 6400 "
        "--eval-every 50 --store data --workers 2 --quiet"
        for task, lrs in (
            ("reverse", UP),
            ("sort", UP),
            ("histogram", UP),
            ("reverse", f"{UP},0.1"),
            ("sort", f"{UP},0.1"),
        )
    ),
    # n_heads 1 (tied_qk's best at 3e-4) and d_model 128 (stacked's and tied_qkv's) one step down
    *(
        f"python -m core sweep --task associative_recall --seeds 5 --lr {DOWN} --until solved --eval-every 50 "
        f"--store data --workers 2 --quiet --steps 6400 --attention all --{axis}"
        for axis in ("n-heads 1", "d-model 128")
    ),
    # d_head 8 to 25,600 (tied_qkv: its censored seeds still improving at 12,800), every member from step 0 (the
    # 12,800 end states were lost with a machine): mqa's and gqa's jobs on a lent H100, the other five on this CPU,
    # two sweeps on a core each sharing the jobs through their claims
    f"{extended(DOWN, 25600)} {NO_IDENTITY} --d-head 8",
    # d_head 8 to 51,200 (tied_qkv: 4 of 4 censored seeds still improving at 25,600): tied_qk's and tied_qkv's
    # censored members went on from their 25,600 end states in the scratch store, mqa and gqa (whose end states
    # stayed on the lent GPU) trained again from step 0, on this CPU; two sweeps on a core each shared the jobs, and
    # tied_qkv's, restarted from its checkpoint on both cores once the others were done, wrote no record before that
    f"{extended(DOWN, 51200)} {NO_IDENTITY} --d-head 8",
    # d_head 8's grid one step further down (3e-5) for the whole point, since tied_qk's best lr at 51,200 (1e-4) was
    # the lowest; the stored runs of the other lrs are skipped. On this CPU, two sweeps on a core each; the parts
    # they ran in the session before (standard's, stacked's and bilinear's new members, and the first 3,000 or so
    # steps of tied_qk's and tied_qkv's) were killed at its end and wrote no record
    f"{extended(f'3e-05,{DOWN}', 51200)} {NO_IDENTITY} --d-head 8",
    # 16 key-value pairs, trained on a lent H100 (--device cuda --workers 4: 4 min 15 s for its 160 members; on the
    # 2-core CPU every member that does not solve runs to the cap, an estimated 6.5 hours)
    f"{CRITERION_SCAN} --attention all --length 16",
    # d_model 32 to 25,600 (tied_qkv's and identity's censored seeds still improving at 12,800, 2 of 5 and 5 of 5), in
    # a scratch store with --carry-from data: the members data/ held stopped before 12,800 were carried over, and
    # tied_qkv's and identity's 25 each trained from step 0 on this CPU (the 12,800 end states were lost with a
    # machine), going on from their checkpoints across four starts, three of them stopped at a session's end
    f"{extended(UP, 25600)} --attention all --d-model 32",
    # d_model 32 to 51,200 (tied_qkv: 1 of 5 censored seeds still improving at 25,600): tied_qkv's and identity's
    # members went on from their 25,600 end states in the same scratch store on this CPU, across two starts (the
    # first stopped at a session's end), the other six carried
    f"{extended(UP, 51200)} --attention all --d-model 32",
    # d_model 32 to 102,400 (tied_qkv: 1 of 5 censored seeds still improving at 51,200): tied_qkv's and identity's
    # members went on from their 51,200 end states in the same scratch store on this CPU, across three starts (the
    # first two were killed, one at a session's end, and wrote no record), the other six carried
    f"{extended(UP, 102400)} --attention all --d-model 32",
    # the bundled induction point to 25,600 (identity: its 5 censored seeds at the best lr all still improving at
    # 12,800): identity's 30 members trained again from step 0 on this CPU (data/ keeps no end states), in a scratch
    # store with --carry-from data, which carried the other seven's members (each stopped before 12,800) with the
    # weights and models data/ kept of them; two starts, the first stopped by SIGTERM after its first checkpoint
    # to give the job both cores
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{UP} --until solved "
    "--steps 25600 --eval-every 50 --store data --workers 2 --quiet",
    # the bundled induction point to 51,200 (identity: 1 of 5 seeds solved at 25,600, the other 4 still improving):
    # identity's 29 censored members went on from their 25,600 end states in the same scratch store on this CPU in
    # one start, the other seven's members carried with their weights and models
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{UP} --until solved "
    "--steps 51200 --eval-every 50 --store data --workers 2 --quiet",
    # the bundled induction point to 102,400 (identity: 1 of its 2 unsolved seeds at the best lr still improving at
    # 51,200): identity's 24 censored members went on from their 51,200 end states (their lineage records copied
    # into a fresh scratch store) on this CPU in two starts, the first stopped at a session's end; the other seven's
    # members carried with their weights and models
    f"python -m core sweep --attention all --task induction --seeds 5 --lr 0.0001,{UP} --until solved "
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
    f"{extended(DOWN, 25600)} {NO_IDENTITY} --d-head 4",
    # d_head 4 to 51,200 (tied_qk's censored seeds still improving at 25,600, 2 of 2): the 42 censored members went on
    # from their 25,600 end states in the same scratch store on this CPU, across several starts, each going on from
    # its checkpoints
    f"{extended(DOWN, 51200)} {NO_IDENTITY} --d-head 4",
    # 32 key-value pairs, trained on a lent H200 (--device cuda --workers 8, in two parts: 7 min 14 s, cancelled with
    # four jobs done, then 1 min 43 s for the other four from their checkpoints); on the 2-core CPU a 20-member job
    # takes about 2 s a step, up to 28 hours for the line
    f"{CRITERION_SCAN} --attention all --length 32",
    # induction with eight heads to 25,600 (identity: its 5 censored seeds at the best lr all still improving at
    # 12,800), and the grid one step up (3e-2) for the whole point, since identity's best lr there was the highest
    # (1e-2): on this CPU in a scratch store with --carry-from data, which carried every member that had stopped
    # before 12,800; identity's 20 censored members trained again from step 0 (data/ keeps no end states), and the
    # 3e-2 seeds from step 0, the other seven's stopped as hopeless by 7,600 steps
    f"{induction_scan(25600, UP)} --attention all --n-heads 8",
    # associative recall with eight heads to 25,600 (tied_qkv: 4 of 4 censored seeds still improving at 12,800,
    # identity 2 of 5): on this CPU in a scratch store with --carry-from data, which carried every member that had
    # stopped before 12,800; tied_qkv's and identity's censored members trained again from step 0 (data/ keeps no end
    # states), two sweeps on a core each sharing the jobs through their claims, in three parts (the first stopped at a
    # session's end, the second by SIGTERM to give identity's job both cores once tied_qkv's was done), each going on
    # from its checkpoints
    f"{extended(DOWN, 25600)} --attention all --n-heads 8",
    # associative recall with eight heads to 51,200 (tied_qkv: 2 of its 4 censored seeds still improving at 25,600):
    # on this CPU in the scratch store of the 25,600 line, each member censored there going on from its end state.
    # tied_qkv's job ran first, alone (the first line: its sweep record; its runs are the second line's); then the
    # whole point, as a point is read at one cap: identity's job over two sessions (the part a session's end stopped
    # wrote no record; the next went on from its checkpoint), the other six parameterizations carried, every member
    # of theirs having stopped before 25,600
    f"{extended(DOWN, 51200)} --attention tied_qkv --n-heads 8",
    f"{extended(DOWN, 51200)} --attention all --n-heads 8",
    # induction with eight heads to 51,200 (identity: 4 of its 5 censored seeds at the best lr still improving at
    # 25,600): on this CPU in a scratch store with --carry-from data; identity's 25 members went on from their 25,600
    # end states, its job in three parts over two sessions (the first stopped by a session's end, which wrote no
    # record; the second by SIGTERM, to give it one core beside another sweep), each going on from its checkpoint; the
    # other seven parameterizations carried, every member of theirs having stopped before 25,600
    f"{induction_scan(51200, UP)} --attention all --n-heads 8",
    # 16 key-value pairs to 12,800 (tied_qkv: 3 of its 5 censored seeds still improving at 6,400, identity 5 of 5), and
    # the grid one step down (1e-4) for the whole point, since stacked's and tied_qk's best lr there (3e-4) was the
    # lowest: on this CPU in a scratch store with --carry-from data, which carried every member that had stopped
    # before 6,400; tied_qkv's and identity's 25 members each trained from step 0 (their 6,400 end states stayed on the
    # lent H100), two sweeps on a core each sharing the jobs through their claims (a third took mqa's and gqa's 1e-4
    # seeds), in parts over two sessions (a session's end stopped the first, which wrote no record), each going on
    # from its checkpoint; the 1e-4 seeds of the six others (not tied_qkv's or identity's) were stopped as hopeless
    f"{extended(DOWN)} --attention all --length 16",
    # 16 key-value pairs to 25,600 (tied_qkv: 2 of 2 censored seeds still improving at 12,800, identity 1 of 1): on
    # this CPU in the scratch store of the 12,800 line, tied_qkv's 22 and identity's 20 censored members going on from
    # their 12,800 end states, the other six parameterizations carried, every member of theirs having stopped before
    # 12,800; two sweeps on a core each until identity's job was done, then tied_qkv's job alone on both cores over two
    # sessions (SIGTERM before the first session's end wrote its part's record), each part going on from its checkpoint
    f"{extended(DOWN, 25600)} --attention all --length 16",
    # induction with eight heads to 102,400 (identity: 1 of its 1 censored seed at the best lr still improving at
    # 51,200): on this CPU in the scratch store of the 51,200 line, identity's 21 members censored there going on from
    # their end states, on one core beside another sweep in two parts over two sessions (SIGTERM before the first
    # session's end wrote its part's record; the second went on from its checkpoint); the other seven
    # parameterizations carried, every member of theirs having stopped before 51,200
    f"{induction_scan(102400, UP)} --attention all --n-heads 8",
    # 16 key-value pairs to 51,200 (tied_qkv: 2 of its 2 censored seeds at the best lr still improving at 25,600): on
    # this CPU in the scratch store of the 25,600 line, tied_qkv's 21 members censored there going on from their end
    # states, the other seven parameterizations carried, every member of theirs having stopped before 25,600; in five
    # parts over two sessions (each stopped by SIGTERM, which wrote its record, to move between one core and two
    # beside another sweep, or before a session's end), each going on from its checkpoint
    f"{extended(DOWN, 51200)} --attention all --length 16",
    # 16 key-value pairs' grid one step further down (3e-5) for the whole point, since tied_qkv's best lr at 51,200
    # (1e-4) was the lowest; the stored runs of the other lrs carried from data/, so only 3e-5 trained, from step 0.
    # On a lent H200 (--device cuda --workers 8: 5 min 24 s for its 40 members; a CPU sweep of the same line, stopped
    # when this one was done, had reached step 14,000 of tied_qkv's job in 84 minutes)
    f"{extended(f'3e-05,{DOWN}', 51200)} --attention all --length 16",
    # induction with two heads to 51,200 (identity: 3 of its 5 censored seeds at the best lr, tied_qk 1 of 1 and
    # tied_qkv 1 of 2 still improving at 25,600), and the grid one step down (1e-4) for the whole point, since
    # tied_qkv's best lr there (3e-4) was the lowest: on this CPU in a scratch store with --carry-from data, which
    # carried every member that had stopped before 25,600; the censored members trained again from step 0 (data/
    # keeps no end states), in two parts in one session (the first stopped by SIGTERM after a checkpoint to give
    # tied_qk's job, the last, both cores)
    f"{induction_scan(51200, DOWN)} --attention all --n-heads 2",
    # induction with two heads to 102,400 (tied_qkv: 1 of its 1 and identity 1 of its 3 censored seeds at the best lr
    # still improving at 51,200): on this CPU in the scratch store of the 51,200 line, tied_qkv's 12 and identity's 22
    # members censored there going on from their end states, the other six parameterizations carried, every member of
    # theirs having stopped before 51,200; in two parts in one session (the first on a core each until tied_qkv's job
    # was done, stopped by SIGTERM after a checkpoint to give identity's job both cores), 75 min of sweeps
    f"{induction_scan(102400, DOWN)} --attention all --n-heads 2",
    # associative recall at d_model 16 to 25,600 with ten seeds a cell (open at 12,800: bilinear 3 of its 3 censored
    # seeds still improving, tied_qk 3 of 5, standard 2 of 8, tied_qkv 2 of 5, stacked 1 of 4, gqa 1 of 4, identity
    # 1 of 5), and the grid one step up (3e-2) for the whole point, since tied_qkv's and identity's best lr there (1e-2)
    # was the top: on this CPU in scratch stores with --carry-from data, which carried the members that had stopped
    # before 12,800; the others trained from step 0 (data/ keeps no end states): tied_qkv's and identity's jobs first
    # (their 100 members, all censored at 25,600), then the other six one lr at a time (--part K/5), over several
    # sessions, each part's runs parked in data/parked/ between them (`park`); parts stopped by SIGTERM before a
    # session's end wrote their records, and the members they had not finished trained again from step 0
    f"{capped(TEN_SEEDS, 25600, UP)} --attention all --d-model 16",
    # the one-layer control to 51,200 (at 25,600 seeds were still improving in 7 of its 8 cells), and the grid one
    # step down (1e-4) for the whole point, since tied_qkv's best lr there (3e-4) was the lowest: every member trained
    # again from step 0 on this CPU (data/ keeps no end states), one lr at a time (--part K/5) in a scratch store
    # with --carry-from data over five sessions, each part's runs parked in data/parked/ between them (`park`).
    # bilinear's and tied_qk's 1e-3 jobs (each one's best lr) had been parked without the weights and models the
    # pages read, so they trained again from step 0 as `--part 3/5` of the line in a fresh scratch store carrying
    # the other 190 runs (--carry-from): their 10 runs replace the parked ones, a fresh draw of each seed
    f"python -m core sweep --attention all --task induction --seeds 5 --lr {DOWN} --n-layers 1 --until solved "
    "--steps 51200 --eval-every 50 --store data --workers 2 --quiet",
    # the one-layer control to 102,400 (at 51,200 seeds were still improving in 7 of its 8 cells): on this CPU in the
    # 51,200 line's scratch store with --carry-from data, one lr at a time (--part K/5), two copies side by side
    # (--workers 1) over several sessions, each part's runs parked in data/parked/ between them (`park`); members whose
    # 51,200 end states were in that store went on from them, the others (those parked before it existed) trained
    # again from step 0, a fresh draw of each seed
    f"python -m core sweep --attention all --task induction --seeds 5 --lr {DOWN} --n-layers 1 --until solved "
    "--steps 102400 --eval-every 50 --store data --workers 2 --quiet",
)
