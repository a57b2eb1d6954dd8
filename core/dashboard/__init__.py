"""The pages' helpers: the sidebar's selection (ui), URL-synced widgets (urls), cached loaders, Train's jobs, plots.

May import: core.attention, core.training, core.results, core.analysis, core.experiments (the Train
page's sweep). Nothing outside the dashboard and the pages imports it.
"""
