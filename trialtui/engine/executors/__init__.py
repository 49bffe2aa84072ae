"""The executors: `local` (this machine's lanes), `ssh` (a GPU box), `ray` (a cluster); one module each.

`executor_for` turns `--executor` (or `[executor] url`) into an unopened Executor through the plug-in
registry, so a third party's scheme is an entry point of `trialtui.executors` naming an Executor class.
"""

from __future__ import annotations

from trialtui.core import plugins
from trialtui.core.config import ExecutorSettings
from trialtui.core.executor import GROUP, Executor, ExecutorError, parse_target
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.executors.ray_cluster import RayExecutor
from trialtui.engine.executors.ssh import SshExecutor

for _kind in (LocalExecutor, SshExecutor, RayExecutor):
    plugins.register(GROUP, _kind.scheme, _kind)


def executor_for(url: str | None, settings: ExecutorSettings | None = None, device: str | None = None) -> Executor:
    """The executor `url` names (default: the settings' url, then this machine), not yet opened."""
    settings = settings or ExecutorSettings()
    target = parse_target(url or settings.url)
    kinds = {name: kind for name, kind in plugins.registry(GROUP).items()
             if isinstance(kind, type) and issubclass(kind, Executor)}
    kind = kinds.get(target.scheme)
    if kind is None:
        raise ExecutorError(f"no executor for {target.scheme}:// (known: {', '.join(sorted(kinds))})")
    return kind(target, settings, device)
