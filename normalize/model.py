"""Model descriptions: plain data naming the wire protocol, the vendor endpoint and the prices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from normalize._jsonmodel import JsonModel
from normalize.secret_forms import masked_headers, masked_repr, masked_url

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ["COST_BASES", "CostBasis", "Model", "ModelCost"]

#: How a model's use is paid for (see :class:`ModelCost`).
CostBasis = Literal["metered", "free", "subscription", "unknown"]

#: Every :data:`CostBasis`, in the order the documentation lists them.
COST_BASES: tuple[CostBasis, ...] = ("metered", "free", "subscription", "unknown")


def check_basis(basis: object, field: str) -> None:
    """Raise ``ValueError`` naming ``field`` unless ``basis`` is one of :data:`COST_BASES` (shared with
    :mod:`normalize.usage`; not public)."""
    if basis not in COST_BASES:
        raise ValueError(f"{field} must be one of {', '.join(COST_BASES)}, not {basis!r}")


def cost_schema(source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
    """The pydantic schema of a cost data class (:class:`ModelCost`, :class:`normalize.Cost`) whose JSON
    form is pi's numbers, with ``basis`` added only when it is not ``metered`` (so pi's shape round
    trips exactly), and an ``unknown`` cost written as ``{"basis": "unknown"}`` alone: zeros would be
    read as a price of $0 by a reader that does not know the field (pi's arithmetic on the missing
    numbers gives NaN, never $0). Shared with :mod:`normalize.usage`; not public."""
    from pydantic_core import core_schema  # noqa: PLC0415 - pydantic loads on first use, as in _jsonmodel

    schema = handler(source)

    def serialize(value: Any, default: core_schema.SerializerFunctionWrapHandler) -> Any:
        data = default(value)
        basis = getattr(value, "basis", "metered")
        if not isinstance(data, dict):  # pragma: no cover - a dataclass always dumps to a dict
            return data
        if basis == "unknown":
            return {"basis": "unknown"}
        if basis == "metered":
            data.pop("basis", None)  # pyright: ignore[reportUnknownMemberType]
        return data  # pyright: ignore[reportUnknownVariableType]

    schema["serialization"] = core_schema.wrap_serializer_function_ser_schema(serialize)
    return schema


@dataclass(slots=True, kw_only=True)
class ModelCost(JsonModel):
    """Prices in USD per million tokens, and the ``basis`` they are charged on.

    - ``metered`` (the default, and what pi's JSON means): billed per token at these rates; a rate
      of 0 means that part is not charged.
    - ``free``: nothing is charged (a model on a local server); it has no rates (any given are set to
      0) and a usage's cost is 0 with ``basis="free"``.
    - ``subscription``: paid by a plan, not per token; a usage's cost is priced at the rates (the
      list prices the use would cost metered, 0 when none are given) and carries
      ``basis="subscription"``, so nobody reads it as a bill.
    - ``unknown``: the price is not known; it has no rates (any given are set to 0, so the object
      equals its JSON round trip) and a usage's cost is unknown (``Cost.total`` is None), never $0.

    A ``basis`` that is not one of these raises ``ValueError`` (``"Free"`` would otherwise be priced
    as metered); one set on an existing object later is refused when a stream starts (``config``).

    The JSON form is pi's ``{input, output, cacheRead, cacheWrite}`` plus ``basis`` when it is not
    ``metered`` (a missing basis reads as ``metered``); an ``unknown`` price is written as
    ``{"basis": "unknown"}`` with no rates, so no reader can take it for a price of $0.
    """

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    basis: CostBasis = "metered"

    def __post_init__(self) -> None:
        check_basis(self.basis, "ModelCost.basis")
        if self.basis in ("free", "unknown"):
            # One form however the price was made (by hand, from JSON): these bases have no rates.
            self.input = self.output = self.cache_read = self.cache_write = 0.0

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """The JSON form described in the class docstring."""
        return cost_schema(source, handler)

    @property
    def known(self) -> bool:
        """False when the price is not known (``basis == "unknown"``)."""
        return self.basis != "unknown"


@dataclass(slots=True, kw_only=True)
class Model(JsonModel):
    """A model to call.

    ``api`` is the wire protocol (``anthropic-messages``, ``openai-completions`` …) and decides which
    StreamFn runs; ``provider`` is the vendor or endpoint. ``compat`` holds per-api quirk flags and
    ``thinking_level_map`` maps thinking levels to vendor values (``None`` = unsupported level).
    ``cost`` is the price (:class:`ModelCost`; a model built by hand without one is metered at $0).
    """

    id: str
    api: str
    provider: str
    name: str = ""
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = field(default_factory=lambda: ["text"])
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 8_192
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    thinking_level_map: dict[str, str | None] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.id

    def __repr__(self) -> str:
        # Headers may carry a gateway's credential and base_url a `?key=`: people log models, so these
        # show masked, as pydantic's SecretStr shows a secret (the fields themselves are untouched).
        return masked_repr(self, base_url=masked_url(self.base_url), headers=masked_headers(self.headers))
