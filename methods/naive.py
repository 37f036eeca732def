"""The plain W2S student: soft-label Bradley-Terry on the weak teacher's labels."""
from methods.api import Method, Step, soft_bt_loss


class Naive(Method):
    """
    name: naive
    idea: soft-label Bradley-Terry on the teacher's labels
    paper: Burns et al. 2023, "Weak-to-Strong Generalization" (applied to reward models)

    loss = -[q log s(r_a - r_b) + (1 - q) log s(r_b - r_a)],  q = s(teacher r_a - teacher r_b).
    The base of most methods here: they subclass it and add to its loss.
    """

    def loss(self, step: Step):
        loss = soft_bt_loss(step.r_a, step.r_b, step.target)
        return loss, {"bt": loss.detach()}
