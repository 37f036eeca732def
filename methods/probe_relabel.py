"""Probe relabelling: a probe on the pretrained strong model's features, fitted to the weak labels, relabels them."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from methods.api import LabelInputs, Labels, MethodParams
from methods.naive import Naive

KNN_ROWS = 1024   # rows of the distance matrix held at once: n x n float64 is 3 GB at 20k pairs


def knn_predictions(features: torch.Tensor, labels: torch.Tensor, k: int) -> torch.Tensor:
    """Per pair, the mean label of its k nearest pairs by Euclidean distance in ``features``, itself
    included (EleutherAI w2s's KnnProbe fits and predicts on the same points); ties in distance go to the
    earlier pair. In float64, so that near-equal distances order the same everywhere."""
    x, y = features.double(), labels.double()
    out = []
    for start in range(0, len(x), KNN_ROWS):
        nearest = torch.sort(torch.cdist(x[start:start + KNN_ROWS], x), dim=1, stable=True).indices[:, :k]
        out.append(y[nearest].mean(dim=1))
    return torch.cat(out)


def logreg_predictions(features: torch.Tensor, labels: torch.Tensor, l2: float) -> torch.Tensor:
    """sigmoid(x_i . w), w minimising mean BCE(x . w, labels) + l2 * |w|^2 by L-BFGS from zero (w2s's
    LogisticProbe and Classifier.fit). No bias: on pair features f(a) - f(b) a bias would be a preference
    for the first response, which the pairs' seeded order makes meaningless, and without it the probe is
    exactly a reward head r = w . f fitted by soft-label Bradley-Terry on frozen features."""
    x, y = features.double(), labels.double()
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    # float64 and tolerances tighter than torch's defaults (which stop 1e-5 short on a two-point fit)
    optimizer = torch.optim.LBFGS([w], line_search_fn="strong_wolfe", max_iter=10_000, tolerance_grad=1e-10,
                                  tolerance_change=1e-14)

    def closure():
        optimizer.zero_grad()
        loss = F.binary_cross_entropy_with_logits(x @ w, y) + l2 * w.square().sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        optimizer.step(closure)
    return torch.sigmoid(x @ w.detach())


class ProbeRelabel(Naive):
    """
    name: probe-relabel
    idea: relabel each pair with a probe (kNN or logistic) fitted to the weak labels on the pretrained strong model's features
    paper: EleutherAI w2s (github.com/EleutherAI/w2s, w2s/probe.py: KnnProbe, LogisticProbe; probe_relabel in w2s/sft.py)

    Label stage (bench/stages/label_stage.py): x_i = f(a_i) - f(b_i), where f is what the pretrained strong
    model's reward head reads (its input vector, so that the head's reward gap is linear in x_i), computed
    once per strong model and half B and cached; the probe is fitted to the teacher's labels q on every
    half-B pair and predicts p_i on the same pairs; the student trains on p_i with naive's loss.

      probe=knn (default):  p_i = mean of q_j over the k nearest x_j (Euclidean, x_i itself included:
                            the reference fits and predicts on the same points); k default 50, as
                            the issue that added it asked (the reference's KnnProbeConfig
                            default differs across its versions: 20 in some, 50 in others);
                            at most the number of pairs
      probe=logreg:         p_i = sigmoid(x_i . w), w = argmin mean BCE(x . w, q) + l2 |w|^2 (L-BFGS
                            from 0, as the reference's; no bias, which the reference's probe
                            has: see logreg_predictions); l2 default 1e-3

    The reference reads a middle layer's last-token state of each text; a reward model's pair is read
    where its head reads it, as a difference, instead. Its ``probe_relabel`` replaces the weak labels
    with the probe's predictions, as here; ``probe-filter`` is its ``probe_filter``.
    """

    class Params(MethodParams):
        probe: Literal["knn", "logreg"] = "knn"
        k: int = Field(50, ge=1)
        l2: float = Field(1e-3, ge=0.0, allow_inf_nan=False)

    def probe_predictions(self, inputs: LabelInputs) -> tuple[list[float], dict]:
        """The probe's P(a > b) per half-B pair, and what the record says about it."""
        features, labels = inputs.strong_features(), torch.tensor(inputs.soft_labels, dtype=torch.float64)
        if self.params.probe == "knn":
            k = min(self.params.k, len(labels))
            predictions, info = knn_predictions(features, labels, k), {"probe": "knn", "k": k}
        else:
            predictions, info = logreg_predictions(features, labels, self.params.l2), {"probe": "logreg"}
        agree = ((predictions > 0.5) == (labels > 0.5)).double().mean().item()
        return predictions.tolist(), {**info, "agreement_with_teacher": 100.0 * agree}

    def relabel(self, inputs: LabelInputs) -> Labels:
        predictions, info = self.probe_predictions(inputs)
        return Labels(predictions, info=info)
