"""The stages of a cell and the loop that runs them: teacher, label stage, student training, scoring,
the cell loop of bench run (pipeline) and bench evaluate, and where cells run (executors, sweep)."""
