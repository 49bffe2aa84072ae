"""Saves, as editors really make them: bursts grouped by a quiet window, temp and swap files ignored.

vim writes `4913` probes, `.swp` files and `~` backups, and may save by rename; emacs makes `#x#`
autosaves and `.#x` lock links; JetBrains writes `___jb_tmp___`/`___jb_old___`; VS Code and others
save atomically through a temp name. Only the final content of a candidate file counts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from watchfiles import Change, awatch

from trialtui.core.state_dir import STATE_DIR

_EDITOR_TEMP = re.compile(
    r"""(
        ^4913$ | ~$ | \.sw[a-p]$ | \.swx$ | ^\#.*\#$ | ^\.\# | ___jb_(tmp|old)___$ |
        \.tmp$ | \.bak$ | \.orig$ | \.crswap$ | \.kate-swp$ | ^\.~lock\. | \.part$
    )""",
    re.VERBOSE,
)


def is_editor_temp(name: str) -> bool:
    return bool(_EDITOR_TEMP.search(name))


def _interesting(path: Path) -> bool:
    """trialtui's own writes (.trialtui/) must not keep the quiet window from ever closing."""
    return STATE_DIR not in path.parts and "__pycache__" not in path.parts and not is_editor_temp(path.name)


POLL_MS = 20
ROOT_CHECK_S = 1.0  # while nothing changes, how often the problem directory is looked for


async def until_stopped(stop: asyncio.Event, root: Path, gone: Callable[[], None]) -> None:
    """Wait for `stop`; a removed `root` calls `gone` within ROOT_CHECK_S, whatever the watcher is doing
    (a fresh-clone CI run saw an engine outlive its removed directory by 120 s, the watcher silent)."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), ROOT_CHECK_S)
        except asyncio.TimeoutError:
            if not stop.is_set() and not root.exists():  # the watcher may have said so first
                gone()


async def saves(
    root: Path,
    *,
    quiet_ms: int,
    stop: asyncio.Event,
) -> AsyncIterator[tuple[set[Path], set[Path]]]:
    """Yield (changed, deleted) sets of files once `quiet_ms` passes without a change.

    watchfiles reports a batch after POLL_MS of quiet; the rest of the quiet window is timed here
    from that batch, so a save is seen within the window plus one poll. A removed `root` ends the
    iteration with an empty batch within ROOT_CHECK_S, whatever watchfiles said of it.
    """
    changes = awatch(
        root,
        step=POLL_MS,
        debounce=max(1600, quiet_ms * 4),
        stop_event=stop,
        recursive=True,
        watch_filter=lambda change, name: _interesting(Path(name)),
    ).__aiter__()
    changed: set[Path] = set()
    deleted: set[Path] = set()
    pending: asyncio.Future | None = None
    remaining = max(0.0, (quiet_ms - POLL_MS) / 1000)
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(changes.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=remaining if (changed or deleted) else ROOT_CHECK_S)
            if not done:
                if changed or deleted:  # the window closed quietly: one save
                    yield changed, deleted
                    changed, deleted = set(), set()
                elif not root.exists():  # watchfiles may never report its own root going (a race with its start)
                    yield set(), set()
                    return
                continue
            try:
                batch = pending.result()
            except StopAsyncIteration:
                return
            finally:
                pending = None
            for change, name in batch:
                path = Path(name)
                if change == Change.deleted and not path.exists():
                    deleted.add(path)
                    changed.discard(path)
                elif path.exists():
                    changed.add(path)
                    deleted.discard(path)
    finally:
        if pending is not None:
            pending.cancel()
