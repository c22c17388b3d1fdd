"""Evaluation: replay recorded runs through a compactor, probe retention, write reports.

* `replay` (`kompakt.eval.replay`): a recorded run, turn by turn, through a compactor.
* `probes`: the run's own artifacts and planted facts, and whether they stay visible.
* `retention`: strategies side by side at several budgets.
* `report`: one self-contained HTML file with inline SVG charts.
* `batch`: many transcripts over a local worker pool or Ray.
* `svg`: the inline charts.

Compactors by name or config file are `kompakt.presets` (the command line and serve
use them too); writing transcripts back is `kompakt.formats.documents`.
"""
