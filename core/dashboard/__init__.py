"""The pages' helpers: the sidebar and URL-synced widgets (ui), cached loaders, the Train page's jobs, plots.

May import: core.attention, core.training, core.results, core.analysis, core.experiments (the Train
page's sweep). Nothing outside the dashboard and the pages imports it.
"""
