"""The ``bench`` commands, the parser aside (bench/cli.py builds it and dispatches). Imports inside the
command functions are deliberate: ``bench --help`` and a mistyped option answer without loading torch.

- ``args``: argument types and the argument groups several commands share;
- ``settings``: a command's settings from its command line;
- ``run``: run, sweep, labels, evaluate, export (train and score);
- ``read``: list, card, report, compare, verify (read what is registered or finished);
- ``board``: submit, validate, leaderboard.
"""
