"""Image generation OpenAI runs: ``image_generation_call``, its partial images streamed as
``response.image_generation_call.partial_image`` events, and the final image (``result``,
base64)."""

from __future__ import annotations

from collections.abc import Callable

from ormock.protocol.tools.kind import Emit, ToolKind
from ormock.protocol.types import Json

__all__ = ["IMAGE_GENERATION", "PARTIAL_IMAGE"]

PARTIAL_IMAGE = "response.image_generation_call.partial_image"


def _not_drawn_yet(fields: Json) -> Json:
    return {**fields, "result": None}


def _partials(emit: Emit, item_id: str, index: int, fields: Json, partials: tuple[str, ...],
              chunk: Callable[[str], list[str]]) -> None:
    for number, image in enumerate(partials):
        emit(PARTIAL_IMAGE, item_id=item_id, output_index=index, partial_image_index=number,
             partial_image_b64=image)


IMAGE_GENERATION = ToolKind(
    type="image_generation_call",
    prefix="ig",
    required=("id", "status"),
    opening=_not_drawn_yet,
    before=("in_progress", "generating"),
    middle=_partials,
    after=("completed",),
    events=(PARTIAL_IMAGE,),
)
