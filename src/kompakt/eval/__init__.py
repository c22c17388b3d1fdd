"""Evaluation: replay recorded runs through a compactor, probe retention, write reports.

* `replay` (`kompakt.eval.replay`): a recorded run, turn by turn, through a compactor.
* `probes`: the run's own artifacts and planted facts, and whether they stay visible.
* `retention`: strategies side by side at several budgets.
* `report`: one self-contained HTML file with inline SVG charts.
* `batch`: many transcripts over a local worker pool or Ray.
* `compactors`: compactors by name or config file; `documents`: writing transcripts back;
  `svg`: the inline charts.
"""
