"""The experiment machinery: plan a sweep, train its jobs (in-process, worker processes or Ray), store them.

Holds sweep, sweep_command (`python -m core sweep`), run_job, workers, cluster (Ray) and flops (FLOP counts
and the measured matmul peak). May import: core.attention, core.training, core.results, core.analysis (a
sweep prints its summary), core.flags (sweep's own command).
"""
