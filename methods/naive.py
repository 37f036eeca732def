"""naive -- the plain W2S student: soft-label Bradley-Terry on the weak teacher's labels.

loss = -[q log s(r_a - r_b) + (1 - q) log s(r_b - r_a)],  q = s(teacher r_a - teacher r_b).
Paper: Burns et al. 2023, "Weak-to-Strong Generalization", applied to reward models.
"""
from methods.base import Method, Step, soft_bt_loss


class Naive(Method):
    name = "naive"
    summary = "soft-label Bradley-Terry on the teacher's labels"

    def loss(self, step: Step):
        loss = soft_bt_loss(step.r_a, step.r_b, step.target)
        return loss, {"bt": loss.item()}
