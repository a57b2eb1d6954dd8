"""`python -m core bench`: the engine against the plain loop, one attention layer, the store at scale, profiles.

Holds bench (everything side by side), layer_bench, store_bench, criterion_bench (to a criterion against a
fixed budget), schedule (criterion sweeps replayed in other job orders), precision (fp32 against bf16),
blas_bench (numpy's BLAS threads) and profile.
May import: anything below the dashboard (attention, training, results, experiments, analysis).
"""
