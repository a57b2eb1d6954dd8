"""`python -m core bench`: the engine against the plain loop, one attention layer, the store at scale, profiles.

Holds bench (everything side by side), layer_bench, store_bench and profile.
May import: anything below the dashboard (attention, training, results, experiments, analysis).
"""
