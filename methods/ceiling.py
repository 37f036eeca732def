"""ceiling -- the upper reference: the strong model trained on the gold labels of the student's half.

Same pairs, same order, same loss as ``naive``, but the target is the gold label (1 when a is the
chosen response) instead of the teacher's soft label. The gap between teacher and ceiling is what
a W2S method can recover.
"""
from methods.naive import Naive


class Ceiling(Naive):
    name = "ceiling"
    summary = "strong model on gold labels of half B (upper reference)"
    labels = "gold"
