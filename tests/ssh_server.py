"""A real SSH server on 127.0.0.1 for the SSH executor's tests (asyncssh's, in a thread of the test process).

It authenticates one user by a key made for the test and runs each command as a child process in a
temporary directory, as sshd runs a command in a session: stdin, stdout and stderr are the channel's,
and when the connection goes, the command sees EOF on stdin.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import threading
from pathlib import Path

import asyncssh


class SshServer:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = getpass.getuser()
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.identity = self.root / "client_key"
        client_key.write_private_key(str(self.identity))
        os.chmod(self.identity, 0o600)
        self._host_key = host_key
        self._authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())
        self.cwd = self.root / "remote-home"
        self.cwd.mkdir(exist_ok=True)
        self.commands: list[str] = []
        self.connections: list[asyncssh.SSHServerConnection] = []
        self.children: list[int] = []  # pids of the commands it started
        self.cut_when = None  # a test's test of the command's output lines: the connection is cut at the first that passes
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="ssh-server", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result(timeout=60)
        self.port = self._server.sockets[0].getsockname()[1]
        self.known_hosts = self.root / "known_hosts"
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_key.export_public_key().decode()}")

    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"

    async def _listen(self):
        server = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn):
                server.connections.append(conn)

            def begin_auth(self, username):
                return True

            def public_key_auth_supported(self):
                return True

            def validate_public_key(self, username, key):
                return username == server.user and server._authorized.validate(key, "127.0.0.1", "127.0.0.1") is not None

        return await asyncssh.create_server(Server, "127.0.0.1", 0, server_host_keys=[self._host_key],
                                            process_factory=self._run, encoding=None)

    async def _run(self, process: asyncssh.SSHServerProcess) -> None:
        """The command as a child process, its streams pumped through the channel line by line (so a test
        can cut the connection at an exact point of the conversation, see `cut_when`)."""
        self.commands.append(process.command)
        child = await asyncio.create_subprocess_shell(
            process.command, cwd=self.cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=1 << 30)
        self.children.append(child.pid)

        async def pump_in() -> None:
            try:
                while data := await process.stdin.read(1 << 16):
                    child.stdin.write(data)
                    await child.stdin.drain()
            except (asyncssh.Error, OSError):
                pass
            child.stdin.close()  # the connection went: the command sees EOF, as under sshd

        async def pump_out(source, sink, watch: bool) -> None:
            try:
                while line := await source.readline():
                    if watch and self.cut_when is not None and self.cut_when(line):
                        self.cut_when = None
                        process.channel.get_connection().abort()
                        return
                    sink.write(line)
                    await sink.drain()
            except (asyncssh.Error, OSError):
                pass

        feeding = asyncio.ensure_future(pump_in())
        await asyncio.gather(pump_out(child.stdout, process.stdout, True), pump_out(child.stderr, process.stderr, False))
        code = await child.wait()
        feeding.cancel()  # the command is done: the session ends, as sshd ends it
        await asyncio.gather(feeding, return_exceptions=True)
        try:
            process.exit(code)
        except (asyncssh.Error, OSError):
            pass

    def drop(self) -> None:
        """Every connection cut, as a network fault cuts it."""
        for conn in list(self.connections):
            self.loop.call_soon_threadsafe(conn.abort)

    def close(self) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()
            for conn in list(self.connections):
                conn.abort()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()
