"""The ShiftBench leaderboard: ``core`` turns a submissions folder into DataFrames (no web code),
``figures`` draws them, ``app`` serves them with Gradio, ``static`` writes a static page."""
