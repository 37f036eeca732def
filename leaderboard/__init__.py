"""The ShiftBench leaderboard: ``core`` turns a submissions folder into DataFrames and decides how they
are shown (no web code), ``cache`` keeps each submission's validation outcome by its files' checksums,
``figures`` draws the pictures, ``render`` turns the ranking into HTML, ``app`` serves it all with
Gradio and ``static`` writes a static page."""
