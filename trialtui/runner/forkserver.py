"""A job module's imports done once: this process forks a fresh supervisor (and through it the job) on request.

`python -P -m trialtui.runner.forkserver [MODULE]`, started by trialtui.engine.forkservers with a Unix
socket on stdin and the environment its jobs get. Without MODULE it is a base: it imports torch, the
import every job module shares, and forks servers (`SERVER` requests): each child sets its jobs'
environment, imports what its module's warm process would (triton where the module allows it, under
that environment's TRITON_INTERPRET; never CUDA) and serves that module. One torch import then serves
the compile stage and the checker alike, instead of one per module and environment.

A module's server forks on each request (`REQUEST`, carrying the two pipe ends of a new supervisor's
stdin and stdout); the child becomes that supervisor (trialtui.runner.supervisor, in a session of its
own), and its job is a fork too, not an exec. A job forked this way starts in milliseconds instead of
the seconds `import torch` takes, on every job of a watch. Sandboxed jobs are never forked: bubblewrap
has to wrap the job from its exec.

Nothing of a job reaches this process: it is not dumpable (a job cannot read or write its memory
through /proc), a child keeps none of its descriptors, and it forks only while it runs no other Python thread.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import socket
import struct
import sys
import threading

from trialtui.core.prctl import seal

REQUEST = b"F"  # fork a supervisor; fds: its stdin's read end, its stdout's write end
SERVER = b"S"  # (a base) fork a module's server; fds: its socket, a pipe holding {"module", "env"}
PID = struct.Struct("i")  # the reply per request: the supervisor's or server's pid, or 0 when no fork was made
BASE_IMPORTS = ("torch",)  # what a base imports: every job module's first warm import, read by no job's environment


def warm_imports(module: str) -> tuple[str, ...]:
    """What MODULE's `--warm` process imports before it waits (its own WARM_IMPORTS, else the default)."""
    from trialtui.runner.child import WARM_IMPORTS

    return tuple(getattr(importlib.import_module(module), "WARM_IMPORTS", WARM_IMPORTS))


def single_threaded() -> bool:
    """A fork copies only the calling thread: a lock another Python thread holds would stay held in the
    child. (OpenBLAS's pool, started by numpy's import, stops and restarts itself around a fork.)"""
    return threading.active_count() == 1


def become_supervisor(module: str, stdin_fd: int, stdout_fd: int) -> None:
    """In the child: the supervisor's own descriptors and session, then its main loop; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the request socket too: a job cannot ask for forks
        from trialtui.runner import supervisor

        supervisor.FORKED_MODULE = module
        supervisor.main()
        code = 0
    finally:
        os._exit(code)


def become_server(sock_fd: int, launch_fd: int) -> None:
    """In a base's child: its module's server, in the environment the engine sent; never returns."""
    code = 1
    try:
        with os.fdopen(launch_fd, "rb") as fh:
            launch = json.loads(fh.read())
        os.dup2(sock_fd, 0)  # in place of the base's socket: this child can never ask the base for forks
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.environ.clear()
        os.environ.update(launch["env"])
        module = launch["module"]
        for name in warm_imports(module):
            importlib.import_module(name)
        serve(socket.socket(fileno=0), module)
        code = 0
    finally:
        os._exit(code)


def serve(sock: socket.socket, module: str) -> None:
    """Fork one supervisor (or, in a base, one server) per request until the engine closes its end.

    What the imports made is frozen out of the garbage collector first: a collection in a fork walks
    every object and so copies every page it touches (0.4 CPU-s per full collection in a fork of a process
    that imported torch and triton, 2-core CPU, 2026-12-03), and every job is a fork of this process."""
    gc.collect()
    gc.freeze()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1, 2)
        except OSError:
            return
        if not message:
            return
        pid = 0
        wanted = SERVER if not module else REQUEST
        if message == wanted and len(fds) == 2 and single_threaded():
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                if module:
                    become_supervisor(module, *fds)
                become_server(*fds)
        for fd in fds:
            os.close(fd)
        try:
            sock.sendall(PID.pack(pid))
        except OSError:
            return


def main() -> None:
    module = sys.argv[1] if len(sys.argv) > 1 else ""
    seal()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the engine watches its supervisors through pidfds; the kernel reaps them
    sock = socket.socket(fileno=0)
    for name in warm_imports(module) if module else BASE_IMPORTS:
        importlib.import_module(name)
    serve(sock, module)


if __name__ == "__main__":
    main()
