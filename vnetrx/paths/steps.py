"""A small recorder of ``Step`` records shared by the path modules."""

from __future__ import annotations

from vnetrx.kernel.changes import Change
from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Step, Value


class StepLog:
    """Collects steps in order; each cites ``file:function @ version`` of the profiled kernel."""

    def __init__(self, profile: KernelProfile) -> None:
        self._profile = profile
        self.steps: list[Step] = []
        self.notes: list[str] = list(profile.notes)

    def add(
        self,
        file: str,
        function: str,
        summary: str,
        because: tuple[Change, ...] = (),
        **values: Value,
    ) -> None:
        self.steps.append(
            Step(
                function=function,
                source=f"{file}:{function} @ {self._profile.name}",
                summary=summary,
                values=tuple(values.items()),
                because=tuple(c.key for c in because),
            )
        )

    def add_cited(
        self, source: str, function: str, summary: str, because: tuple[str, ...] = (),
        **values: Value,
    ) -> None:
        """A step whose source (``file:function @ version``) and change keys are already known
        (a recorded check)."""
        self.steps.append(
            Step(function=function, source=source, summary=summary,
                 values=tuple(values.items()), because=because)
        )

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
