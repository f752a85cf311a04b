"""The models.json format: a wrong entry is refused naming the file and the field, and the price basis
(docs/models.md, "The models.json format")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import streamfns
from streamfns.catalog import CatalogError, load_models_file

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]


def _model(**fields: Any) -> dict[str, Any]:
    return {"id": "m", "context_window": 1000, "max_tokens": 100, **fields}


def _write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _file(*models: object, **group: Any) -> dict[str, Any]:
    """A file whose third provider group holds ``models`` (the two before it are fine)."""
    fine = {"provider": "a", "models": [_model()]}
    return {"api": "x", "providers": [fine, {"provider": "b"}, {"provider": "c", **group, "models": list(models)}]}


CASES: list[tuple[object, str, str]] = [
    (_file(_model(cost={"input": "3"})), "providers[2].models[0].cost.input", 'expected a number, not "3"'),
    (_file(_model(cost={"input": -1})), "providers[2].models[0].cost.input", "at least 0"),
    (_file(_model(cost={"input": True})), "providers[2].models[0].cost.input", "expected a number, not true"),
    (_file(_model(cost={"cacheRead": 1})), "providers[2].models[0].cost.cacheRead", "here snake_case"),
    (_file(_model(cost={"basis": "cheap"})), "providers[2].models[0].cost.basis", "metered, free, subscription"),
    (_file(_model(cost={"basis": "free", "input": 1})), "providers[2].models[0].cost", "has no rates"),
    (_file(_model(cost={"basis": "unknown", "output": 2})), "providers[2].models[0].cost", "has no rates"),
    (_file(_model(cost=[1, 2])), "providers[2].models[0].cost", "expected an object of rates"),
    (_file({"context_window": 1, "max_tokens": 1}), "providers[2].models[0].id", "missing"),
    (_file(_model(id="")), "providers[2].models[0].id", "non-empty string"),
    (_file({"id": "m", "max_tokens": 1}), "providers[2].models[0].context_window", "missing"),
    (_file(_model(max_tokens=True)), "providers[2].models[0].max_tokens", "expected a whole number, not true"),
    (_file(_model(max_tokens=0)), "providers[2].models[0].max_tokens", "at least 1, not 0"),
    (_file(_model(context_window=1.5)), "providers[2].models[0].context_window", "expected a whole number"),
    (_file(_model(input=["text", "audio"])), "providers[2].models[0].input[1]", 'not "audio"'),
    (_file(_model(reasoning="yes")), "providers[2].models[0].reasoning", "expected true or false"),
    (_file(_model(aliases=["a", 3])), "providers[2].models[0].aliases[1]", "expected a string"),
    (_file(_model(headers={"x-a": 1})), "providers[2].models[0].headers.x-a", "expected a string"),
    (_file(_model(thinking_level_map={"huge": "x"})), "providers[2].models[0].thinking_level_map.huge", "not a"),
    (_file(_model(compat=[])), "providers[2].models[0].compat", "expected an object"),
    (_file("m"), "providers[2].models[0]", 'expected an object, not "m"'),
    (_file(any_model={"id": "x", "context_window": 1, "max_tokens": 1}), "providers[2].any_model.id", "no id"),
    (_file(any_model={"context_window": 1}), "providers[2].any_model.max_tokens", "missing"),
    (_file(_model(), provider=""), "providers[2].provider", "non-empty string"),
    (_file(_model(), base_url=7), "providers[2].base_url", "expected a string, not 7"),
    ({"api": "x", "providers": {"a": 1}}, "providers", "expected a list of provider groups"),
    ({"api": "x", "providers": [{"models": list[object]()}]}, "providers[0].provider", "missing"),
    ({"providers": [{"provider": "a", "models": [_model()]}]}, "providers[0].models[0].api", "names no api"),
]


@pytest.mark.parametrize(("document", "where", "problem"), CASES)
def test_a_wrong_entry_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, document: object, where: str, problem: str
) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(CatalogError) as raised:
        load_models_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert problem in message, message


def test_what_is_not_a_catalog_at_all_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"models\.json: not JSON"):
        load_models_file(path)
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"models\.json: expected an object with a 'providers' list"):
        load_models_file(path)
    with pytest.raises(CatalogError, match="cannot be read"):
        load_models_file(tmp_path / "missing.json")


def test_a_good_file_loads_with_its_prices_bases(tmp_path: Path) -> None:
    document = {
        "api": "x",
        "providers": [
            {
                "provider": "p",
                "base_url": "https://p.example/v1",
                "any_model": {"context_window": 0, "max_tokens": 10, "cost": {"basis": "free"}},
                "models": [
                    _model(id="metered", cost={"input": 1, "output": 2}, note="kept as a comment"),
                    _model(id="unpriced"),
                    _model(id="plan", cost={"basis": "subscription"}, api="y", aliases=["plan-1"]),
                ],
            }
        ],
    }
    models = load_models_file(_write(tmp_path, document))
    assert [(m.id, m.api, m.base_url) for m in models] == [
        ("metered", "x", "https://p.example/v1"),
        ("unpriced", "x", "https://p.example/v1"),
        ("plan", "y", "https://p.example/v1"),
    ]
    assert [(m.cost.basis, m.cost.input, m.cost.output) for m in models] == [
        ("metered", 1.0, 2.0),
        ("unknown", 0.0, 0.0),  # no cost at all: the file does not know the price, so it is not $0
        ("subscription", 0.0, 0.0),
    ]


def test_every_builtin_catalog_file_loads_and_local_servers_are_free() -> None:
    for path in sorted((ROOT / "streamfns").glob("*/models.json")):
        assert load_models_file(path), path
    assert {m.cost.basis for m in streamfns.list_models("ollama")} == {"free"}
    assert streamfns.get_model("ollama", "my-finetune:latest").cost.basis == "free", "the any_model entry"
    for provider in ("vllm", "ollama-openai", "lmstudio", "llamacpp"):
        assert {m.cost.basis for m in streamfns.list_models(provider)} == {"free"}, provider
    priced = [m for m in streamfns.list_models() if m.cost.basis == "metered"]
    assert all(m.cost.input > 0 or m.cost.output > 0 for m in priced), "a $0 metered price is a free one"


def test_the_format_is_documented_field_by_field() -> None:
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    section = page.split("## The models.json format", 1)[1].split("\n## ", 1)[0]
    fields = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    expected = {
        *("api", "providers", "provider", "base_url", "models", "any_model"),
        *("id", "name", "aliases", "reasoning", "input", "cost", "context_window", "max_tokens"),
        *("headers", "compat", "thinking_level_map", "note"),
        *("cache_read", "cache_write", "output", "basis"),
    }
    assert expected <= set(fields), expected - set(fields)
    for basis in ("metered", "free", "subscription", "unknown"):
        assert f"`{basis}`" in section, basis
    assert "load_models_file" in section
