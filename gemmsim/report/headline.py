"""What an experiment declares as its lesson (the ``headline:`` of an experiment file).

The terminal table shows the headline ``columns`` first (then the modelled time and its bound); report.html leads
with the ``lesson``, the ``claim`` it tests (quoted in experiments/CLAIMS.md), the ``figures`` that carry it and the
``verdict`` columns as sentences; everything else sits below, collapsed.
"""

from __future__ import annotations

from pydantic import Field

from gemmsim.schema import Strict


class Headline(Strict):
    """The lesson of an experiment: what to show first."""

    lesson: str = Field(description="What the experiment shows, in one or two sentences (report.html's first paragraph).")
    columns: list[str] = Field(min_length=1, description="Result columns the terminal table shows first (after machine, kernel, shape).")
    figures: list[str] = Field(default_factory=list, description="Figure names (file stems, or their prefix) that carry the lesson, shown first.")
    verdict: list[str] = Field(default_factory=list, description="Result columns whose text is a verdict; printed as lines under the table.")
    claims: list[str] = Field(default_factory=list, description="Claim ids of experiments/CLAIMS.md the experiment tests (e.g. 000-2.1).")


def headline_of(exp) -> Headline | None:
    """The Headline of an Experiment or of its dict (experiment.yaml); None when it declares none or it is unreadable."""
    raw = exp.get("headline") if isinstance(exp, dict) else getattr(exp, "headline", None)
    if raw is None:
        return None
    if isinstance(raw, Headline):
        return raw
    try:
        return Headline.model_validate(raw)
    except ValueError:
        return None
