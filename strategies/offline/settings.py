"""The offline reasoner's knobs. One set of defaults serves every KG; nothing here names a
dataset."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OfflineSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_hops: int = Field(3, ge=1, le=4, description="Longest relation path considered.")
    beam: int = Field(40, ge=1, description="Partial paths kept per depth.")
    max_span: int = Field(
        4, ge=1, le=8, description="Longest question phrase (tokens) matched to one hop."
    )
    spans_per_hop: int = Field(
        6, ge=1, description="Best phrases tried for each hop in the alignment."
    )
    hop_price: float = Field(
        0.30, description="τ: a hop must match its phrase this much above average to pay."
    )
    lexical_weight: float = Field(
        0.15, description="Bonus when a question word shares a stem with the hop's phrase."
    )
    unmatched_cost: float = Field(0.45, description="Cost of a hop that matches no phrase at all.")
    misread_margin: float = Field(
        0.2,
        description="A question relation word that names a relation the best plan "
        "does not walk, read by the plan as a relation it does not name and that fits it this "
        "much worse, marks the answer as of the wrong kind (value capped, 'unsupported'): the "
        "topic lacks that relation.",
    )
    sibling_cost: float = Field(
        0.12,
        description="Cost of the wordless return hop r⁻¹ right after r "
        "('films that share actors with X').",
    )
    coverage_weight: float = Field(
        1.0,
        description="Cost per unit of a question relation word (a phrase matching "
        "some relation better than τ) that no hop of the plan explains.",
    )
    return_reads: bool = Field(
        True,
        description="Let a return hop r⁻¹ (right after r) read words of its own when "
        "the walk goes on to a new relation ('who directed the films written by the writer "
        "of X'); otherwise it only has the wordless 'same r' reading.",
    )
    slot_cost: float = Field(
        0.3,
        description="Cost per relation noun of the question's possessive / 'of' chain "
        "on the mention ('the spouse of the other half of X 's spouse': 3) beyond the plan's hops.",
    )
    hub_fanout: float = Field(
        10.0,
        gt=1,
        description="A wordless return hop ('the same r') that multiplies the "
        "frontier by more than this ('everyone of the same gender') does not stand for one of "
        "the chain's relation nouns (see slot_cost).",
    )
    sibling_weight: float = Field(
        1.0,
        description="Weight of the question's 'same r / share r' reading, which "
        "offsets the sibling cost.",
    )
    chain_cost: float = Field(
        1.0,
        description="Cost of each consecutive hop pair r1 → r2 that the KG rarely "
        "composes: r1's typical targets have r2 far less often than the KG's nodes at large.",
    )
    chain_min_expected: float = Field(
        5.0,
        gt=0,
        description="Judge a pair only when the base rate predicts at least "
        "this many of r1's sampled targets to have r2.",
    )
    chain_max_ratio: float = Field(
        0.2,
        gt=0,
        le=1,
        description="A pair is rare when fewer than this fraction of the expected targets have r2.",
    )
    value_examples: int = Field(
        3,
        ge=0,
        description="Values (sampled targets) in a relation's extra verbalisation "
        "'<relation>: v1, v2, ...' that question phrases are also compared with; 0: off.",
    )
    value_weight: float = Field(
        1.0,
        description="Weight of that centred value reading (the better of it and the "
        "bare reading counts).",
    )
    value_centring: str = Field(
        "mixed",
        pattern="^(apart|shared|mixed)$",
        description="What similarities are "
        "centred on: 'mixed' — every reading on the bare phrases and value readings of the "
        "whole vocabulary together; 'shared' — only value readings on both; 'apart' — value "
        "readings on value readings only.",
    )
    salience_weight: float = Field(
        0.35,
        ge=0,
        description="When no question phrase names a relation (none matches "
        "one better than τ: 'describe X in a few words'), a plan gains this × ln(1 + edges "
        "its first hop has at the topic) — the answer is what the KG says most about X.",
    )
    order_weight: float = Field(
        0.05, description="Bonus per hop pair whose phrases nest outward from the topic."
    )
    type_weight: float = Field(
        0.07,
        description="Weight of the answer-type prior (question phrase vs the last "
        "hop's typical targets).",
    )
    type_std_floor: float = Field(
        0.05, gt=0, description="Floor of the spread the answer-type z-score divides by."
    )
    type_sample: int = Field(
        32, ge=1, description="Target names sampled per relation to embed its answer type."
    )
    max_frontier: int = Field(
        3000,
        ge=1,
        description="Paths reaching more entities than this are not expanded "
        "(over I/O, a read cut at its edge cap is read again to tell; still cut: more).",
    )
    max_answers: int = Field(200, ge=1, description="Answers kept per plan.")
    plans: int = Field(10, ge=1, description="Ranked plans returned.")
    value_scale: float = Field(
        10.0,
        description="Slope of the logistic turning a plan's margin over its best rival "
        "into a 0..1 value (fitted on the dev samples).",
    )
    value_bias: float = Field(0.1, description="Intercept of that logistic.")
