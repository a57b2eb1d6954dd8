"""The analysis: every statistic stated (findings), similarity metrics, baselines, pretrained models.

Holds findings (best lr, intervals, verdicts: the one place statistics live), similarity (numpy
metrics on per-head weights), baselines (step-0 and fresh-init references), pretrained (real models) and
blas (numpy's BLAS on one thread, for the CLI and the app's server).
May import: core.attention, core.training, core.results. Never the experiments, benchmarks or dashboard.
"""
