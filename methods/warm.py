"""WARM: the reward model is the average of the weights of students trained from one start in different data orders."""
from __future__ import annotations

import dataclasses

from pydantic import Field

from bench.core.data import sub_seed
from bench.core.errors import BenchError
from bench.stages.train import TrainingLoop
from methods.api import MethodParams, load_trainable_state, trainable_state
from methods.naive import Naive


def member_seeds(seed: int, members: int) -> list[int]:
    """The data-order seed of each member: the run's own first (so one member is naive exactly), then
    seeds derived from it."""
    return [seed] + [sub_seed(seed, f"warm-member-{i}") for i in range(1, members)]


class Warm(Naive):
    """
    name: warm
    idea: train M students from the same pretrained start in different data orders, then average their weights
    paper: Ramé et al. 2024, "WARM: On the Benefits of Weight Averaged Reward Models"

    Member i trains as naive does (soft-label BT on the teacher's labels, the pair's student settings)
    from the same start, the pretrained student with its seeded head, in the data order of seed s_i:
    s_0 is the cell's student-order seed, naive's order (so ``members=1`` is naive exactly), and
    s_i = sub_seed(s_0, "warm-member-i"). After the M trainings every parameter that trains (the
    backbone, or with LoRA the adapters, and the head) is set to the members' mean,
    theta = (1/M) sum_i theta_i (summed in float32); frozen weights are the same in every member.

    The paper's argument: fine-tuned members that share a pretrained start stay linearly mode connected,
    so their weight average is itself a good reward model, and it keeps what the members agree on while
    averaging out what each learnt alone (label noise, its own data order), at the inference cost of one
    model. It is ANCHOR's relative in weight space: both keep the student in its pretrained start's
    basin, WARM by averaging fine-tuned members, ANCHOR (and wise-ft, which averages with the start
    itself) by pulling towards the start. The paper also varies hyperparameters and starts from a
    linear-probed head; here the members differ in data order only and start where every method does.
    Costs M trainings, plus two copies of the trainable weights on the CPU (the start and the sum).
    """

    class Params(MethodParams):
        members: int = Field(3, ge=1)

    def fit(self, student, examples, cfg, train):
        if not isinstance(train, TrainingLoop):
            raise BenchError(f"warm sets each member's data order through the training loop's seed, so it needs a "
                             f"bench.stages.train.TrainingLoop as train, not {type(train).__name__} (bench.stages.train.train_student "
                             "passes one)")
        start = trainable_state(student)
        total, logs = {}, []
        for i, seed in enumerate(member_seeds(train.seed, self.params.members)):
            load_trainable_state(student, start)
            self.setup(student)
            log = dataclasses.replace(train, seed=seed)(student, examples, cfg)
            self.finish(student)
            for name, value in trainable_state(student).items():
                total[name] = value.float() if i == 0 else total[name] + value.float()
            logs.append({"seed": seed, **log})
        load_trainable_state(student, {name: value / self.params.members for name, value in total.items()})
        return {"members": logs}
