"""Strong-to-strong rounds: a fresh student learns the previous student's own soft labels."""
from __future__ import annotations

import dataclasses

from pydantic import Field

from bench.stages.train import pair_rewards, validation_metrics
from methods.api import (
    MethodParams,
    load_trainable_state,
    preference_probability,
    trainable_state,
)
from methods.naive import Naive


class S2S(Naive):
    """
    name: s2s
    idea: strong-to-strong rounds: relabel the training pairs with the trained student's own soft labels and train a fresh student on them
    paper: EleutherAI w2s (github.com/EleutherAI/w2s, run.py: --s2s_iters)
    aliases: strong-to-strong

    Round 0 is naive: the pretrained student (with its seeded head) learns the teacher's soft labels q
    with soft-label BT. Each of the ``rounds`` further rounds (1 by default) scores the training pairs
    with the student just trained, relabels each q' = P(a > b) = sigmoid(r_a - r_b), its own soft label,
    and trains a fresh student, the same pretrained start in the same data order, on q' with the same
    loss and settings. The last round's student is the result.

    What we followed: run.py's strong-to-strong loop. For each of ``s2s_iters`` it takes the previous
    model's soft predictions on the train (and validation) split as labels and trains a new strong model
    from the pretrained weights with the same settings and loss (``transfer=True``); off (0) by default
    there, 2 in its sweeps. Here the pairs relabelled are those the method trains on, half B; with early
    stopping (bench.core.specs.EarlyStopping), each round holds out its share of them, labelled like the rest,
    i.e. by the previous round's student, as the reference labels its validation split.

    Why it may help: a strong student cannot fit the teacher's errors that its features do not support,
    so its own labels carry fewer of them, and are smoother; the risk is that the next round confirms
    the first student's errors. The log records, per round, how the trained student fits the labels it
    was trained on (``fit_to_labels``: soft-BT loss and % agreement). Costs rounds + 1 trainings, each
    followed by a scoring pass of the training pairs, plus a copy of the trainable weights on the CPU.
    """

    class Params(MethodParams):
        rounds: int = Field(1, ge=1)

    def fit(self, student, examples, cfg, train):
        start = trainable_state(student)
        labelled, logs = examples, []
        for round_ in range(self.params.rounds + 1):
            self.setup(student)
            log = train(student, labelled, cfg)
            self.finish(student)
            r_a, r_b = pair_rewards(student, examples, 2 * cfg.batch_size, f"s2s round {round_} labels")
            logs.append({**log, "fit_to_labels": validation_metrics(r_a, r_b, [e.target for e in labelled])})
            if round_ == self.params.rounds:
                return {"rounds": logs}
            labelled = [dataclasses.replace(e, target=preference_probability(a, b)) for e, a, b in zip(examples, r_a, r_b)]
            load_trainable_state(student, start)
