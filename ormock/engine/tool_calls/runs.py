"""The embedded default's code interpreter and image generation: a ``code_interpreter_call``
with code that computes something, its container and (when ``include`` asks for them) its
outputs, logs and an image when the user asks for a plot; an ``image_generation_call`` with
as many partial images as the tool asks for and a final image, small valid PNGs."""

from __future__ import annotations

import re

from ormock.engine.tool_calls.asked import Asked, Planned
from ormock.protocol.plan import ToolCallPlan
from ormock.protocol.tools.png import png_base64
from ormock.protocol.types import Json

__all__ = ["code_interpreter", "image_generation"]

_OUTPUTS = "code_interpreter_call.outputs"
_PLOT = re.compile(r"\b(plot|chart|graph|draw)\b", re.IGNORECASE)


def code_interpreter(tool: Json, asked: Asked) -> Planned:
    numbers = [asked.number(2, 99) for _ in range(asked.number(3, 5))]
    mean = sum(numbers) / len(numbers)
    code = f"numbers = {numbers}\nmean = sum(numbers) / len(numbers)\nprint(mean)"
    logs = f"{mean}\n"
    outputs: list[Json] = [{"type": "logs", "logs": logs}]
    if _PLOT.search(asked.text):
        code += "\nimport matplotlib.pyplot as plt\nplt.plot(numbers)\nplt.show()"
        image = png_base64(16, 16, (asked.number(0, 255), 90, 160))
        outputs.append({"type": "image", "url": f"data:image/png;base64,{image}"})
    container = tool.get("container")
    fields: Json = {
        "code": code,
        "container_id": container if isinstance(container, str) else f"cntr_{asked.hex(32)}",
        "outputs": outputs if _OUTPUTS in asked.include else None,
    }
    return Planned([ToolCallPlan("code_interpreter_call", fields)],
                   f"The mean of {', '.join(map(str, numbers))} is {mean}.")


def image_generation(tool: Json, asked: Asked) -> Planned:
    colour = (asked.number(0, 255), asked.number(0, 255), asked.number(0, 255))
    wanted = tool.get("partial_images")
    count = min(max(wanted, 0), 3) if isinstance(wanted, int) else 0
    partials = tuple(png_base64(16, 16, colour, sharpness=1 + n) for n in range(count))
    prompt = " ".join(asked.text.split())[:200] or asked.prose.sentence()
    fields: Json = {"action": "generate", "background": "opaque", "output_format": "png",
                    "revised_prompt": prompt, "result": png_base64(16, 16, colour)}
    for key in ("size", "quality"):
        if isinstance(tool.get(key), str):
            fields[key] = tool[key]
    return Planned([ToolCallPlan("image_generation_call", fields, partial_images=partials)],
                   f"Here is the image: {prompt}")
