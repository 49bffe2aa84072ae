"""One GPU lane per GPU across the host (issue 34): a second process waits, says for whom, and goes on when the holder dies."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from trialtui.core.job_kinds import CALIBRATE
from trialtui.core.job_spec import CalibrateSpec
from trialtui.engine import events as ev
from trialtui.engine import gpu_lock, jobs
from trialtui.engine.gpu_lock import GpuLock, process_name
from trialtui.engine.lanes import Lane

from test_engine import FakeBench, collect, make_engine, root  # noqa: F401 - the fixture

HOLD = textwrap.dedent('''
    import sys, time
    from trialtui.engine.gpu_lock import GpuLock
    assert GpuLock("0").acquire(what="trialtui watch")
    print("held", flush=True)
    time.sleep(600)
''')

WAIT = textwrap.dedent('''
    from trialtui.engine.gpu_lock import GpuLock
    lock = GpuLock("0")
    assert lock.acquire(what="trialtui bench", on_wait=lambda text: print(text, flush=True))
    print("took it", flush=True)
''')


def start(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


@pytest.fixture
def holder():
    """Another process holding gpu0's lane until it is killed."""
    proc = start(HOLD)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_process_waits_names_the_holder_and_proceeds_once_the_holder_is_sigkilled(holder):
    waiter = start(WAIT)
    try:
        said = waiter.stdout.readline().strip()
        assert said.startswith(f"waiting for gpu0: held by trialtui watch, pid {holder.pid}, since ")
        assert waiter.poll() is None  # still waiting
        holder.send_signal(signal.SIGKILL)  # the kernel frees the lock with its holder
        rest = waiter.communicate(timeout=120)[0]
        assert "took it" in rest.splitlines()
        assert waiter.returncode == 0
    finally:
        waiter.kill()


def test_waiters_are_served_in_the_order_they_came(holder, monkeypatch):
    monkeypatch.setattr(gpu_lock, "STALE_S", 600.0)  # a stopped waiter stays in the queue for this test
    first = start(WAIT)
    try:
        assert first.stdout.readline().startswith("waiting for gpu0")
        while not GpuLock("0").others_waiting():  # its place is written once it has waited
            time.sleep(0.01)
        first.send_signal(signal.SIGSTOP)  # it cannot poll now
        holder.kill()
        holder.wait()
        later = time.monotonic()
        assert GpuLock("0").acquire(give_up=lambda: time.monotonic() > later + 1.0) is False  # free, but not ours yet
        first.send_signal(signal.SIGCONT)
        assert "took it" in first.communicate(timeout=120)[0].splitlines()
    finally:
        first.kill()


def test_a_waiter_that_gives_up_holds_nothing(holder):
    lock = GpuLock("0")
    assert lock.acquire(give_up=lambda: True) is False
    holder.kill()
    holder.wait()
    assert lock.acquire()  # the thread lock was not kept by the attempt that gave up
    lock.release()


def test_threads_of_one_process_take_turns_and_a_chain_that_holds_does_not_take_it_again():
    first = GpuLock("0")
    with first.held() as took:
        assert took
        with GpuLock("0").held() as again:  # the same chain of calls (a lane job, then its run_child)
            assert again
        other: list[bool] = []
        thread = threading.Thread(target=lambda: other.append(GpuLock("0").acquire(give_up=lambda: True)))
        thread.start()  # a thread of its own does not inherit the hold
        thread.join()
        assert other == [False]


def test_a_lane_job_holds_the_gpu_for_the_threads_it_starts():
    lane = Lane("gpu0", "0", host=GpuLock("0"))

    async def body() -> tuple[bool, bool]:
        async with lane.held() as took:
            return took, await asyncio.to_thread(GpuLock("0").holds)

    assert asyncio.run(body()) == (True, True)
    assert not GpuLock("0").holds()


def test_a_prepare_cut_short_hands_its_hold_to_the_lanes_next_job_and_an_idle_lane_lets_go():
    lane = Lane("gpu0", "0", host=GpuLock("0"))

    def taken_elsewhere() -> bool:  # another holder would get it now (a thread of its own, as another process)
        other, got = GpuLock("0"), []
        thread = threading.Thread(target=lambda: got.append(other.acquire(give_up=lambda: True)))
        thread.start()
        thread.join()
        other.release()
        return got[0]

    async def body() -> list[bool]:
        async with lane.held():
            lane.carry = True  # the prepare gave way to a queued job, whose checker still prepares on the GPU
        between = taken_elsewhere()
        async with lane.held() as took:  # the next job takes the hold without waiting
            assert took
        after_job = taken_elsewhere()
        async with lane.held():
            lane.carry = True
        lane.let_go()  # the queued job was cancelled: the idle lane keeps nothing
        return [between, after_job, taken_elsewhere()]

    assert asyncio.run(body()) == [False, True, True]


def test_a_queued_trial_says_which_process_holds_its_gpu_and_runs_once_it_is_gone(root, holder):  # noqa: F811
    engine = make_engine(root, bench=FakeBench())
    assert engine.lanes.lanes[0].host is not None  # a GPU of this machine
    seen = collect(engine)

    async def body() -> None:
        run = asyncio.create_task(engine.run(once=True))
        deadline = time.monotonic() + 120
        while not any(isinstance(e, ev.StateChanged) and "held by" in e.message for e in seen):
            assert time.monotonic() < deadline and not run.done(), "no waiting message"
            await asyncio.sleep(0.02)
        assert engine.store.get("t1").state == "queued"
        holder.kill()
        await run

    asyncio.run(body())
    waits = [e for e in seen if isinstance(e, ev.StateChanged) and "held by" in e.message]
    assert waits[0].state == "queued"
    assert waits[0].message.startswith(f"waiting for gpu0: held by trialtui watch, pid {holder.pid}")
    notices = [e.message for e in seen if isinstance(e, ev.Notice) and "held by" in e.message]
    assert len(notices) == 1 and notices[0].startswith("t1 is waiting for gpu0: held by trialtui watch")  # the TUI's toast
    assert engine.store.get("t1").state == "correct"
    engine.close()


def test_trialtui_bench_says_on_stderr_what_it_waits_for_and_a_cancel_ends_the_wait(holder, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_lock, "first_visible", lambda env: "0")  # as on a GPU machine
    handle = jobs.ChildHandle()
    threading.Timer(1.5, handle.cancel).start()
    result = jobs.run_child(CALIBRATE.module, CalibrateSpec(), timeout_s=5, log_path=tmp_path / "log", handle=handle)
    assert result["state"] == "cancelled"
    assert f"trialtui: waiting for gpu0: held by trialtui watch, pid {holder.pid}" in capsys.readouterr().err


def test_the_holder_is_named_as_the_user_typed_it(tmp_path):
    assert process_name(["/venv/bin/trialtui", "watch", "dir", "--headless"]) == "trialtui watch"
    assert process_name(["/venv/bin/trialtui", str(tmp_path)]) == "trialtui"  # the TUI on a directory
    assert process_name(["/src/trialtui/__main__.py", "bench", "kernel.py"]) == "trialtui bench"  # python -m trialtui


def test_a_lock_directory_others_can_write_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv(gpu_lock.RUNTIME_ENV, str(shared))
    with pytest.raises(PermissionError):
        gpu_lock.runtime_dir()
