"""The pages' helpers: the sidebar's selection (ui), URL-synced widgets (urls), cached loaders, Train's jobs, plots.

Holds ui, selection (the sidebar's choices as data), urls, cached (loaders keyed by the store's state), view
(a store as the pages read it: the cached loaders with store, state and selection filled in), catalog
(registry names for pages), jobs and sweep_child (Train's sweep in a child process), live (Parameters' counts
and folds in a child process), charts (the chart component: plotly.js from static/, clicks back to Python)
and plots (every figure).

May import: core.attention, core.training, core.results, core.analysis, core.experiments (the Train
page's sweep). Nothing outside the dashboard and the pages imports it.
"""
