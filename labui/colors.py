"""One meaning per colour across the app (use these, not ad-hoc colours)."""

POSITIVE = "#1f77b4"  # positive advantage / credit, chosen, good
NEGATIVE = "#d62728"  # negative advantage / credit, rejected, bad
KEY = "#2ca02c"  # the key curve of a chart (drawn bold, width 4)
REFERENCE = "#7f7f7f"  # reference curves and the unclipped / unregularized comparison (dashed, width 2)
CURRENT = "#ff7f0e"  # the learner's current point
BAND = "rgba(44, 160, 44, 0.15)"  # a trust / clip region
KEY_WIDTH, REFERENCE_WIDTH = 4, 2
