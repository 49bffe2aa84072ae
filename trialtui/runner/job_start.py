"""How the supervisor starts a job: a stub process as its parent (a candidate that kills its parent kills
only the stub), then the job exec'd, under bubblewrap when sandboxed, or forked from a fork server's
child whose imports are done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from trialtui.core.prctl import PR_SET_PDEATHSIG, prctl


def sandbox_command(command: list[str], scratch: str, binds: list[str]) -> list[str]:
    """bubblewrap: the file system read-only but for the scratch directory, no network, own pid space."""
    cmd = ["bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
           "--bind", scratch, scratch, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
           "--chdir", scratch]
    for path in binds:
        cmd += ["--bind", path, path]
    return [*cmd, "--", *command]


def stub(command: list[str], env: dict[str, str], cwd: str, in_child, fds: tuple[int, int, int],
         pass_fds: tuple[int, int], forked: tuple[str, list[str]] | None = None) -> None:
    """The job's parent, a fork of the supervisor: a candidate that kills its parent kills only this.

    It dies with the supervisor, starts the job (which dies with it), and writes the job's return code
    to the status pipe; a status pipe left empty means the stub itself was killed. In a fork server's
    child (`forked`: the module it imported, and the job's arguments) the job is a fork, not an exec.
    """
    spec_r, out_w, status_w = fds
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, strict=True)
        keep = {spec_r, out_w, status_w, *pass_fds}
        for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
            if fd > 2 and fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass  # the descriptor listdir itself used
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the engine's pipes stay with the supervisor
        if forked:
            pid = fork_job(*forked, env, cwd, in_child, (spec_r, out_w), pass_fds)
        else:
            job = subprocess.Popen(command, stdin=spec_r, stdout=out_w, stderr=out_w, pass_fds=pass_fds, cwd=cwd,
                                   env=env, start_new_session=True, preexec_fn=in_child)
            pid = job.pid
        for fd in (spec_r, *pass_fds):
            os.close(fd)
        os.write(status_w, f"pid {pid}\n".encode())
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) if forked else job.wait()
        os.write(status_w, f"exit {code}\n".encode())
    except BaseException as exc:  # noqa: BLE001 - a stub must never return into the supervisor's code
        try:
            os.write(out_w, f"trialtui: could not start the job: {exc}\n".encode())
            os.write(status_w, b"exit 127\n")
        except OSError:
            pass
    os._exit(0)


def fork_job(module: str, args: list[str], env: dict[str, str], cwd: str, in_child, io: tuple[int, int],
             pass_fds: tuple[int, int]) -> int:
    """What `subprocess.Popen([python, -P, -m, module, *args], ...)` would start, as a fork: the imports are done."""
    import runpy
    import warnings

    spec_r, out_w = io
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setsid()
        os.dup2(spec_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        keep = {0, 1, 2, *pass_fds}
        for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass  # the descriptor listdir itself used
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        in_child()
        sys.argv = ["-m", *args]
        # the fork server imported the job's module on purpose (its imports are the point): runpy's warning that it
        # finds it imported would head every trial's log
        warnings.filterwarnings("ignore", r".* found in sys\.modules after import of package", RuntimeWarning)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:  # as the interpreter would exit
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a forked job must never return into the supervisor's code
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return 0
