"""Probe filtering: drop the weak labels that a probe on the strong model's features disagrees with most."""
from __future__ import annotations

from pydantic import Field

from methods.api import LabelInputs, Labels, drop_share
from methods.probe_relabel import ProbeRelabel


class ProbeFilter(ProbeRelabel):
    """
    name: probe-filter
    idea: drop the share of pairs whose weak label a probe on the pretrained strong model's features disagrees with most
    paper: EleutherAI w2s (github.com/EleutherAI/w2s, w2s/probe.py: Probe.filter; probe_filter in w2s/sft.py)

    Label stage (bench/stages/label_stage.py): the probe of ``probe-relabel`` (same features, ``probe``, ``k``
    and ``l2``) predicts p_i for every half-B pair; the floor(share * n) pairs with the largest
    |p_i - q_i| are dropped (ties: the earlier pair first), as the reference's ``Probe.filter`` drops
    ``int(contamination * n)``; the student trains on the others with the teacher's labels q_i and
    naive's loss. ``share`` default 0.1 (the reference's ``contamination``).
    """

    class Params(ProbeRelabel.Params):
        share: float = Field(0.1, ge=0.0, le=0.5)

    def relabel(self, inputs: LabelInputs) -> Labels:
        predictions, info = self.probe_predictions(inputs)
        q = inputs.soft_labels
        kept = drop_share([abs(p - qi) for p, qi in zip(predictions, q)], self.params.share)
        return Labels([q[i] for i in kept], kept=kept, info={**info, "dropped": len(q) - len(kept)})
