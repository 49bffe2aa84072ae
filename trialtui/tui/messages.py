"""Engine events as Textual messages: the engine's subscriber posts these, and only the app's
`on_*` handlers turn them into widget changes.

Progress and queue messages arrive in bursts (a timing run reports every few milliseconds), so an
unprocessed one is replaced by the next of its kind, as toolong does with its log messages.
"""

from __future__ import annotations

from textual.message import Message

from trialtui.engine import events as ev


class EngineMessage(Message):
    """One engine event, carried as is."""

    def __init__(self, event: ev.Event) -> None:
        super().__init__()
        self.event = event


class TrialCreated(EngineMessage):
    event: ev.TrialCreated


class TrialStateChanged(EngineMessage):
    event: ev.StateChanged


class ResultReady(EngineMessage):
    event: ev.ResultReady


class NewBest(EngineMessage):
    event: ev.NewBest


class DecisionMade(EngineMessage):
    event: ev.DecisionMade


class SaveIgnored(EngineMessage):
    event: ev.SaveIgnored


class EngineNotice(EngineMessage):
    event: ev.Notice


class EngineFailed(EngineMessage):
    event: ev.EngineError


class QueueChanged(EngineMessage):
    event: ev.QueueChanged

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, QueueChanged)


class JobProgress(EngineMessage):
    event: ev.Progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgress) and message.event.trial_id == self.event.trial_id


class JobPreliminary(EngineMessage):
    event: ev.Preliminary

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobPreliminary) and message.event.trial_id == self.event.trial_id


MESSAGES: dict[type[ev.Event], type[EngineMessage]] = {
    ev.TrialCreated: TrialCreated,
    ev.StateChanged: TrialStateChanged,
    ev.ResultReady: ResultReady,
    ev.NewBest: NewBest,
    ev.DecisionMade: DecisionMade,
    ev.SaveIgnored: SaveIgnored,
    ev.Notice: EngineNotice,
    ev.EngineError: EngineFailed,
    ev.QueueChanged: QueueChanged,
    ev.Progress: JobProgress,
    ev.Preliminary: JobPreliminary,
}


def to_message(event: ev.Event) -> EngineMessage:
    return MESSAGES.get(type(event), EngineMessage)(event)


class EngineStopped(Message):
    """The engine's run() raised: the app stays open to read the trials, and says why."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class FinalizeDone(Message):
    """The finalize worker's outcome: the files written, or why nothing was."""

    def __init__(self, trial_id: str, ok: bool, text: str) -> None:
        super().__init__()
        self.trial_id = trial_id
        self.ok = ok
        self.text = text
