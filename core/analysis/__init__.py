"""The analysis: every statistic stated (findings), similarity metrics, baselines, pretrained models.

Holds findings (best lr, intervals, verdicts: the one place statistics live), similarity (numpy
metrics on per-head weights), baselines (step-0 and fresh-init references) and pretrained (real models).
May import: core.attention, core.training, core.results. Never the experiments, benchmarks or dashboard.
"""
