"""The real preference datasets of the protocol ``w2s-shift-v1``.

One small module per dataset family holds its pure normaliser ``normalize(row) -> Pair | DropReason``,
the columns it needs and its rule in words (``hh`` serves both hh-rlhf subsets, helpful and
harmless). ``loading`` reads the raw rows -- from the Hugging Face Hub or from local files in the
original schema -- normalises them and records where they came from; its docstring gives the
local data-dir layout. ``rows`` holds what the normalisers share.
"""
