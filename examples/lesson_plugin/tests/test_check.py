"""The temperature lesson's check: its solution matches, each mistake is named, each sentence is in both languages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tracer.compare.check.run import check
from tracer.present import messages
from tracer.present.strings import LANGS
from tracer.record import registry

ROOT = Path(__file__).resolve().parent.parent


def solution() -> Callable[[torch.Tensor], torch.Tensor]:
    """``attention`` from the package's ``solution.py``, loaded from its file as the check loads a student's."""
    namespace: dict[str, object] = {}
    path = ROOT / "solution.py"
    exec(
        compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace
    )  # our own file, loaded as the check loads one
    fn = namespace["attention"]
    assert callable(fn)
    return fn


def after_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x @ x.T, dim=-1) / 2.0 @ x


def multiplied(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x @ x.T * 2.0, dim=-1) @ x


def missing(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x @ x.T, dim=-1) @ x


def queries_first(x: torch.Tensor) -> torch.Tensor:
    """Right, another way: the queries divided by τ before the product (no raw scores ever held)."""
    return torch.softmax((x / 2.0) @ x.T, dim=-1) @ x


@pytest.mark.parametrize("fn", [solution(), queries_first])
def test_a_right_answer_matches_at_every_stage(fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    result = check(fn, lesson="temperature")
    assert result.ok and result.hit is None, [(s.quantity.key, s.status) for s in result.stages]


@pytest.mark.parametrize(
    ("fn", "code", "stage"),
    [
        (after_softmax, "tau_after_softmax", "cooling"),
        (multiplied, "tau_multiplied", "cooling"),
        (missing, "tau_missing", "cooling"),
    ],
)
def test_each_mistake_is_named_where_it_first_shows(
    fn: Callable[[torch.Tensor], torch.Tensor], code: str, stage: str
) -> None:
    result = check(fn, lesson="temperature")
    assert not result.ok and result.hit is not None and result.hit.code == code
    assert result.first_divergence is not None and result.first_divergence.stage == stage
    for lang in LANGS:  # said by the lesson's own table, in every language, with the temperature filled in
        assert "τ = 2" in result.sentence(lang)


def test_every_sentence_is_in_both_languages() -> None:
    own = registry.get("temperature").check
    keys = [e.key for e in getattr(own, "mistakes", ())]
    assert len(keys) == 3 and all(k.startswith("lesson.temperature.diagnosis.") for k in keys)
    assert messages.gaps("temperature", [*keys, "lesson.temperature.stage.cooling"]) == []
