"""A sanity check of each dataset: the longer response wins, no model trained."""
from methods.api import Method


class Length(Method):
    """
    name: length
    idea: the longer response wins (no training): how far a length bias alone goes on each dataset
    paper: Lambert et al. 2024, "RewardBench" (length-controlled subsets); a standard reward-model sanity check

    reward(prompt, response) = len(response) in characters (tokenizer-free, the same for every
    model pair); equal lengths tie and count half. Its "student" is this rule, so its WRG shows how a
    length heuristic compares with the trained weak teacher, and a dataset where it scores near 100%
    is one a length-biased reward model solves without reading.
    """

    trains = False

    def rule_reward(self, prompt, response: str) -> float:
        return float(len(response))
