"""OpenSSH's own server on 127.0.0.1 for the SSH executor's tests, so they also meet the sshd a GPU box runs.

It runs `sshd -D -e -f <config>` from a temporary directory holding keys made by `ssh-keygen`, lets in one
user (whoever runs the tests) by one key, and gives a session the tests' PATH, so the executor's `python`
(`sys.executable`) is the same interpreter there. As root it uses privilege separation; as anyone else it
runs without it, as sshd allows on a high port.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from procs import DEADLINE_S, alive, cmdline, descendants, wait_for

SBIN = "/usr/sbin:/usr/local/sbin:/sbin"
MISSING = "OpenSSH's server is not installed (apt-get install openssh-server): no sshd to test against"


def missing() -> str | None:
    """Why the real-sshd tests cannot run here, or None."""
    path = f"{os.environ.get('PATH', '')}:{SBIN}"
    return None if shutil.which("sshd", path=path) and shutil.which("ssh-keygen", path=path) else MISSING


class Sshd:
    def __init__(self, root: Path) -> None:
        path = f"{os.environ.get('PATH', '')}:{SBIN}"
        self.sshd = str(Path(shutil.which("sshd", path=path) or "sshd").resolve())  # sshd re-execs itself: an absolute path
        keygen = shutil.which("ssh-keygen", path=path) or "ssh-keygen"
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = getpass.getuser()
        self.host_key = self.root / "host_key"
        self.identity = self.root / "client_key"
        for key in (self.host_key, self.identity):
            subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "trialtui-test", "-f", str(key)],
                           check=True, capture_output=True, timeout=60)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation's empty chroot
        self.log = self.root / "sshd.log"
        self.process = self._start()
        self.pid = self.process.pid
        self.known_hosts = self.root / "known_hosts"
        host_pub = " ".join(self.host_key.with_suffix(".pub").read_text().split()[:2])
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub}\n")

    def _start(self) -> subprocess.Popen:
        """sshd on a free port; another port if one was taken between choosing it and sshd binding it."""
        for _ in range(5):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
            config = self.root / "sshd_config"
            config.write_text("\n".join([
                "ListenAddress 127.0.0.1", f"Port {self.port}", f"HostKey {self.host_key}",
                f"PidFile {self.root / 'sshd.pid'}", f"AuthorizedKeysFile {self.identity.with_suffix('.pub')}",
                f"AllowUsers {self.user}", "PubkeyAuthentication yes", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", "UsePAM no",
                "StrictModes no", "UseDNS no", f'SetEnv PATH="{os.environ.get("PATH", "")}"', "LogLevel INFO", ""]))
            with open(self.log, "ab") as log:
                process = subprocess.Popen([self.sshd, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                           stdout=log, stderr=log)
            deadline = time.monotonic() + DEADLINE_S
            while process.poll() is None and time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
                    return process
                except OSError:
                    time.sleep(0.05)
            if process.poll() is None:
                process.kill()
                process.wait()
                raise AssertionError(f"sshd did not listen on 127.0.0.1:{self.port} in {DEADLINE_S:g} s: "
                                     f"{self.log.read_text()[-2000:]}")
        raise AssertionError(f"sshd would not start: {self.log.read_text()[-2000:]}")

    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"

    def accepted(self) -> int:
        """How many connections sshd has let in so far."""
        return self.log.read_text(errors="replace").count("Accepted publickey for")

    def sessions(self) -> list[int]:
        """sshd's processes for its open connections (not the commands they run)."""
        return [pid for pid in descendants(self.pid) if cmdline(pid).startswith("sshd:")]

    def cut(self) -> list[int]:
        """Every connection lost at once, as when the network goes: sshd's processes for them killed."""
        cut = self.sessions()
        for pid in cut:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return cut

    def close(self) -> None:
        started = descendants(self.pid)  # listed before the daemon goes: then they are no longer below it
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in started:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            wait_for(lambda: not any(alive(pid) for pid in started), "sshd's sessions to end", timeout_s=30)
        except AssertionError:
            for pid in started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
