"""``--ormock-record=drift``: every cassette a selected test uses is recorded again from the
upstream (every request relayed, as ``all`` does) and compared with the file by shape
(``ormock.cassette.drift``, as ``ormock drift`` compares). A cassette whose shape changed fails
its test, naming each change, and the new recording is saved beside it as ``NAME.drift.yaml``
for review; the cassette itself is never written. One whose shape did not change is left as it
is, and its test passes."""

from __future__ import annotations

from pathlib import Path

from ormock.cassette.drift import compare_interactions
from ormock.cassette.model import Cassette, Interaction

__all__ = ["compared_with", "recorded_before"]


def recorded_before(path: Path) -> tuple[Interaction, ...] | str:
    """The interactions of the cassette at ``path`` (ormock's or vcrpy's), or why there are
    none to compare with."""
    from ormock.cassette import CassetteError, load

    if not path.exists():
        return (f"ormock: no cassette at {path} to compare with (--ormock-record=drift "
                "records every cassette again and compares it with the file). Record it "
                "first: pytest --ormock-record=once --ormock-upstream URL")
    try:
        return load(path).interactions
    except (CassetteError, OSError) as error:
        return f"ormock: the cassette {path} could not be read: {error}"


def compared_with(path: Path, old: tuple[Interaction, ...], new: Cassette) -> str | None:
    """What changed in shape from ``old`` (the file at ``path``) to ``new`` (this run's
    recording, saved as ``NAME.drift.yaml`` when it changed), as the test's failure; None when
    nothing did."""
    from ormock.cassette.redact import SecretFound
    from ormock.cassette.save import save_cassette

    compared = compare_interactions(old, new.interactions)
    drifted = [c for c in compared if c.changes]
    if not drifted:
        return None
    out = path.with_name(path.stem + ".drift.yaml")
    try:
        save_cassette(new, out)
        saved = f"the new recording is {out}"
    except SecretFound as refusal:
        saved = f"the new recording was not written: {refusal}"
    except OSError as error:
        saved = f"the new recording could not be written to {out}: {error.strerror}"
    count = sum(len(c.changes) for c in drifted)
    lines = [f"ormock: the cassette {path} changed shape (--ormock-record=drift): "
             f"{count} change{'' if count == 1 else 's'} in {len(drifted)} of "
             f"{len(compared)} interactions; {saved}"]
    for one in drifted:
        lines.append(f"  {one.label}")
        lines.extend(f"    {change}" for change in one.changes)
    lines.append("Review the new recording; when the change is expected, replace the cassette "
                 "with it (or record it again: --ormock-record=rewrite).")
    return "\n".join(lines)
