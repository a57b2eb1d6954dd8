"""The analysis: every statistic stated (findings), similarity metrics, baselines, pretrained models.

Holds findings (best lr, intervals, verdicts: the one place statistics live) with its primitives in stats, its
lr sensitivity in sensitivity and its statistics of the metrics over training in curves (paired differences,
time to solve, update sizes, matched baselines), endpoints (criterion runs: solved by the cap, steps to solve)
with survival (Kaplan-Meier, log-rank) and open_check (the open rule against what a raised cap showed next), axes
(the scan axes: which runs lie on which) and scaling (what the scans read along them), similarity (numpy metrics
on per-head weights), heads (previous-token and induction scores), baselines (step-0 and fresh-init references),
pretrained (real models), checkpoints (your own), blas (numpy's BLAS on one thread, for the CLI and the app's
server), views (the tables the pages show, aggregated so the pages only plot), markdown (the one markdown-table
writer), words (the statistics said in sentences: no statistic is computed there) and endpoint_words (the
criterion endpoints said the same way).
May import: core.attention, core.training, core.results. Never the experiments, benchmarks or dashboard.
"""
