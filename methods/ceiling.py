"""The upper reference: the strong model trained on gold labels instead of the teacher's."""
from methods.naive import Naive


class Ceiling(Naive):
    """
    name: ceiling
    idea: strong model on gold labels of half B (upper reference)
    paper: Burns et al. 2023, "Weak-to-Strong Generalization" (the strong ceiling)

    Same pairs, same order, same loss as ``naive``, but the target is the gold label (1 when a is the
    chosen response) instead of the teacher's soft label. The gap between teacher and ceiling is what
    a W2S method can recover (PGR).
    """

    labels = "gold"
