"""The code interpreter OpenAI runs: ``code_interpreter_call`` with its code (streamed as
``response.code_interpreter_call_code.delta``/``.done``), its container and its outputs (logs
and images)."""

from __future__ import annotations

from ormock.protocol.tools.kind import TextStream, ToolKind
from ormock.protocol.types import Json

__all__ = ["CODE_INTERPRETER"]


def _before_running(fields: Json) -> Json:
    return {**fields, "code": "", "outputs": None}


CODE_INTERPRETER = ToolKind(
    type="code_interpreter_call",
    prefix="ci",
    required=("id", "container_id", "status"),
    opening=_before_running,
    before=("in_progress",),
    text=TextStream("code", "response.code_interpreter_call_code.delta",
                    "response.code_interpreter_call_code.done", "code"),
    after=("interpreting", "completed"),
)
