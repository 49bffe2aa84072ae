"""The state `TrialApp` (tui/app.py) shares with its mixins (`app_actions.KeyActions`, `app_messages.AppMessages`),
named once: a mixin reads through `self` only its own names, Textual's `App`'s, and these
(tests/test_mixin_state.py holds both sides: the mixins to this list, TrialApp to providing all of it)."""

from __future__ import annotations

from collections.abc import Callable

from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.store import Store
from trialtui.engine.front import EngineFront
from trialtui.tui.widgets.detail import TrialDetail
from trialtui.tui.widgets.status_bar import StatusBar
from trialtui.tui.widgets.trial_tree import TrialTree


class AppState:
    """TrialApp's model and views as its key actions and message handlers use them."""

    problem: Problem
    engine: EngineFront  # the engine in this process, or one attached over the control channel
    attached: str  # whose engine that is when another process runs it ("trialtui mcp's engine (pid 4242)"), else ""
    store: Store  # the engine's store, read here
    baseline: str  # the primary baseline's kind: speedups and ranks are against it
    clock: Callable[[], float]  # the app's monotonic clock (a test's fake)
    trials: dict[str, Trial]  # every trial, as last read from the store
    heads: dict[str, str]  # file -> its head trial (the next save's parent)
    best: Trial | None
    follow: bool  # the cursor jumps to each new trial
    unseen: int  # new trials the cursor has not visited while following is off
    running: set[str]  # trials in a running state (the tree's spinner)
    _find_origin: str | None  # the cursor before a find, to return to
    _best_changed: set[str]  # trials whose result may change the best
    _progress_dirty: bool  # a progress line arrived since the status bar last drew
    # the views (TrialApp's cached queries)
    tree: TrialTree
    detail: TrialDetail
    status: StatusBar
    # the model's reads and refreshes (TrialApp's, and AppMessages' `_newest_id`)
    _best_id: str | None
    cursor_trial: Trial | None
    _newest_id: Callable[[], str | None]
    _reload: Callable[[str], Trial | None]
    _soon: Callable[..., None]
    _show: Callable[[Trial | None], None]
    _changed: Callable[[Trial], None]
    _note_gpu: Callable[[Trial], bool]
    _refresh_standing: Callable[[], None]
    _refresh_follow_hint: Callable[[], None]
