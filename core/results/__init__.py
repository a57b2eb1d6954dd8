"""The results store: one parquet file per run (many in a pack), safetensors weights, the runs index, claims.

Holds runfile (one file's format and atomic write), packs (many runs in one file, as data/ keeps them), provenance
(each file's record of what made it), index, claims, store (read/write a store), weights (a run's per-head weights,
checked as read), schema (what every table holds), scratch (checkpoints and criterion runs' end states), models
(core.load_model), export, stores (the named stores the app may read and write), superseded (the runs a higher cap
replaced) and size (a store's bytes and disk blocks against the bundled store's limit).
May import: core.attention, core.training. Never the experiments, analysis, benchmarks or dashboard.
"""
