"""The experiment machinery: plan a sweep, train its jobs (in-process, worker processes or Ray), store them.

Holds sweep, run_job, outlook (what a sweep would train and from which step: `sweep --dry-run`), workers,
cluster (Ray), flops (FLOP counts and the measured matmul peak), recipe (every command behind data/, which
docs/reproduce.md and tests/test_bundled.py read; it ends with raises, the points raised or widened one line at a
time, and is spelled from recipe_parts), lines (a recorded command's recipe line; the line that raises or widens a
point), landing (a finished line's runs copied from its scratch store into data/: `land`), parking (a longer
line's finished jobs kept in data/parked/ between sessions: `park`), pace (a job's member-step timed here, a
line's hours: `todo --hours`) and deadline (`sweep --hours`: a job starts only where it ends in time).
May import: core.attention, core.training, core.results, core.analysis (a sweep's summary).
"""
