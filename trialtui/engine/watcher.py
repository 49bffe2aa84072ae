"""Saves, as editors really make them: bursts grouped by a quiet window, temp and swap files ignored.

vim writes `4913` probes, `.swp` files and `~` backups, and may save by rename; emacs makes `#x#`
autosaves and `.#x` lock links; JetBrains writes `___jb_tmp___`/`___jb_old___`; VS Code and others
save atomically through a temp name. Only the final content of a candidate file counts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

from watchfiles import Change, awatch

_EDITOR_TEMP = re.compile(
    r"""(
        ^4913$ | ~$ | \.sw[a-p]$ | \.swx$ | ^\#.*\#$ | ^\.\# | ___jb_(tmp|old)___$ |
        \.tmp$ | \.bak$ | \.orig$ | \.crswap$ | \.kate-swp$ | ^\.~lock\. | \.part$
    )""",
    re.VERBOSE,
)


def is_editor_temp(name: str) -> bool:
    return bool(_EDITOR_TEMP.search(name))


async def saves(
    root: Path,
    *,
    quiet_ms: int,
    stop: asyncio.Event,
) -> AsyncIterator[tuple[set[Path], set[Path]]]:
    """Yield (changed, deleted) sets of files once `quiet_ms` passes without a change."""
    async for changes in awatch(
        root,
        step=quiet_ms,
        debounce=max(1600, quiet_ms * 4),
        stop_event=stop,
        recursive=True,
        force_polling=False,
        watch_filter=lambda change, name: not is_editor_temp(Path(name).name),
    ):
        changed: set[Path] = set()
        deleted: set[Path] = set()
        for change, name in changes:
            path = Path(name)
            if ".trialtui" in path.parts:
                continue
            if change == Change.deleted and not path.exists():
                deleted.add(path)
            elif path.exists():
                changed.add(path)
                deleted.discard(path)
        yield changed, deleted
