"""Holding a cassette's recorded streams to the protocol, each under the cassette's own profile
(``ormock check cassette.yaml``): every streamed answer, and the WebSocket sessions' server
events turn by turn. A stream resumed with ``?starting_after=N`` is checked as the tail it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs

from ormock.cassette.fileformat import response_bytes
from ormock.cassette.model import Cassette, Interaction
from ormock.protocol.checker import StreamReport, check_stream

__all__ = ["Checked", "check_cassette"]


@dataclass(frozen=True)
class Checked:
    number: int  # the interaction's number in its file, from 1
    interaction: Interaction
    report: StreamReport


def _starting_after(query: str) -> int | None:
    values = parse_qs(query).get("starting_after")
    if not values:
        return None
    try:
        return int(values[0])
    except ValueError:
        return None


def check_cassette(cassette: Cassette, profile: str | None = None,
                   schema: bool = True) -> Iterator[Checked]:
    """A report for each recorded stream (``profile``: over the cassette's own)."""
    spoken = profile or cassette.profile
    for number, interaction in enumerate(cassette.interactions, 1):
        response = interaction.response
        if response is not None and response.streamed and 200 <= response.status < 300:
            after = _starting_after(interaction.request.query)
            yield Checked(number, interaction, check_stream(
                response_bytes(response), schema=schema, profile=spoken,
                resumed=after is not None, starting_after=after))
        elif interaction.socket is not None:
            turn: list[dict[str, object]] = []
            for frame in interaction.socket.frames:
                if frame.sender == "client" and turn:
                    yield Checked(number, interaction, check_stream(
                        turn, schema=schema, profile=spoken))
                    turn = []
                elif frame.sender == "server" and frame.event is not None \
                        and frame.event.get("type") != "error":
                    turn.append(frame.event)
            if turn:
                yield Checked(number, interaction, check_stream(turn, schema=schema,
                                                                profile=spoken))
