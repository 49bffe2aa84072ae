"""A job's output as the supervisor keeps it: the first and last LOG_KEEP bytes, the cut marked."""

from __future__ import annotations

from pathlib import Path

from trialtui.core.state_dir import make_dirs

LOG_KEEP = 1_000_000  # bytes kept at each end of a log: no log is over 2 MB


class Log:
    """The job's output, capped: the first and last LOG_KEEP bytes are kept, and the cut is marked."""

    def __init__(self) -> None:
        self.fh = None
        self.pending = bytearray()  # output before the job (a warm process importing), or its tail
        self.head = 0
        self.dropped = 0

    def open(self, path: str) -> None:
        make_dirs(Path(path).parent)
        self.fh = open(path, "wb")
        early, self.pending = bytes(self.pending), bytearray()
        self.write(early)

    def write(self, data: bytes) -> None:
        if self.fh is None:
            self.pending += data
            del self.pending[:-LOG_KEEP]
            return
        room = LOG_KEEP - self.head
        if room > 0:
            self.fh.write(data[:room])
            self.fh.flush()
            self.head += min(room, len(data))
            data = data[room:]
        if data:
            self.pending += data
            if len(self.pending) > 2 * LOG_KEEP:
                self.dropped += len(self.pending) - LOG_KEEP
                del self.pending[:-LOG_KEEP]

    def close(self) -> int:
        """Write the kept tail after a line saying how much was cut; returns the bytes cut."""
        if self.fh is None:
            return 0
        if len(self.pending) > LOG_KEEP:
            self.dropped += len(self.pending) - LOG_KEEP
            del self.pending[:-LOG_KEEP]
        if self.dropped:
            self.fh.write(f"\n[trialtui: {self.dropped} bytes of output cut here; the first and last "
                          f"{LOG_KEEP} bytes are kept]\n".encode())
        self.fh.write(self.pending)
        self.fh.close()
        return self.dropped
