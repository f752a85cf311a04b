"""``load_models_file`` checks a file the way the catalog does — one code path: the entries field by field,
then the file as a whole (an id or alias listed twice, two ``any_model`` entries of one provider) — and
a price is never made up: an empty ``cost`` is refused, a free or unknown one carries no rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamfns.catalog import CatalogError, load_models_file

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]


def _model(model_id: str = "a", **fields: Any) -> dict[str, Any]:
    return {"id": model_id, "context_window": 1000, "max_tokens": 100, **fields}


def _load(tmp_path: Path, *groups: dict[str, Any]) -> list[Any]:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"api": "x", "providers": list(groups)}), encoding="utf-8")
    return load_models_file(path)


ANY = {"context_window": 0, "max_tokens": 10, "cost": {"basis": "free"}}


@pytest.mark.parametrize(
    ("groups", "said"),
    [
        (
            [{"provider": "p", "models": [_model(), _model()]}],
            "providers[0].models[1]: model p/a is listed twice (also at providers[0].models[0])",
        ),
        (
            [{"provider": "p", "models": [_model(), _model("b", aliases=["a"])]}],
            "providers[0].models[1]: model p/a is listed twice (also at providers[0].models[0])",
        ),
        (
            [{"provider": "p", "models": [_model("a", aliases=["b"]), _model("b")]}],
            "providers[0].models[1]: model p/b is listed twice (also at providers[0].models[0])",
        ),
        (
            [{"provider": "p", "models": [_model("a", aliases=["a"])]}],
            "providers[0].models[0]: model p/a is listed twice (its id and aliases repeat it)",
        ),
        (
            [{"provider": "p", "models": [_model()]}, {"provider": "p", "models": [_model()]}],
            "providers[1].models[0]: model p/a is listed twice (also at providers[0].models[0])",
        ),
        (
            [{"provider": "p", "any_model": ANY}, {"provider": "p", "any_model": ANY}],
            "providers[1].any_model: provider p has two any_model entries (also providers[0].any_model)",
        ),
    ],
    ids=["id", "alias-vs-id", "id-vs-alias", "own-alias", "two-groups", "two-any-models"],
)
def test_a_file_that_lists_a_model_twice_is_refused_naming_both_places(
    tmp_path: Path, groups: list[dict[str, Any]], said: str
) -> None:
    with pytest.raises(CatalogError) as raised:
        _load(tmp_path, *groups)
    assert str(raised.value) == f"{tmp_path / 'models.json'}: {said}"


def test_the_same_id_for_two_providers_is_fine(tmp_path: Path) -> None:
    found = _load(tmp_path, {"provider": "p", "models": [_model()]}, {"provider": "q", "models": [_model()]})
    assert [(model.provider, model.id) for model in found] == [("p", "a"), ("q", "a")]


def test_an_empty_cost_is_refused_rather_than_read_as_zero(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"providers\[0\]\.models\[0\]\.cost: an empty cost says nothing"):
        _load(tmp_path, {"provider": "p", "models": [_model(cost={})]})
    (unpriced,) = _load(tmp_path, {"provider": "p", "models": [_model()]})
    assert unpriced.cost.basis == "unknown", "no cost at all: the price is not known"


def test_no_built_in_file_writes_rates_for_a_free_or_unknown_price() -> None:
    # docs/models.md: "free — No rates"; the files say {"basis": "free"} alone.
    found: list[str] = []
    for path in sorted((ROOT / "streamfns").glob("*/models.json")):
        for group in json.loads(path.read_text(encoding="utf-8"))["providers"]:
            entries = [*group.get("models", []), *([group["any_model"]] if "any_model" in group else [])]
            for entry in entries:
                cost = entry.get("cost")
                if cost is not None and cost.get("basis") in ("free", "unknown") and set(cost) != {"basis"}:
                    found.append(f"{path.parent.name}: {group['provider']}/{entry.get('id', '*')}")
    assert found == []
