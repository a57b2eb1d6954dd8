"""The pages' helpers: the sidebar's selection (ui), URL-synced widgets (urls), cached loaders, Train's jobs, plots.

Holds ui, selection (the sidebar's choices as data), urls, cached (loaders keyed by the store's state), catalog
(registry names for pages), jobs and sweep_child (Train's sweep in a child process), live (Parameters' counts
and folds in a child process), charts (draws a figure with static/'s plotly.js) and plots (every figure).

May import: core.attention, core.training, core.results, core.analysis, core.experiments (the Train
page's sweep). Nothing outside the dashboard and the pages imports it.
"""
