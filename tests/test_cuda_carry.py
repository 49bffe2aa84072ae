"""benches/cuda_carry.py's repack: the toolkit without what `nvcc -c` never runs, under the device call's carry."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

_spec = importlib.util.spec_from_file_location("cuda_carry", Path(__file__).resolve().parent.parent / "benches" / "cuda_carry.py")
cuda_carry = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cuda_carry)


def test_a_slimmed_wheel_drops_the_unrun_tools_and_their_record_lines_and_keeps_modes(tmp_path):
    wheel = tmp_path / "src" / "nvidia_nvvm-13.0.88-py3-none-any.whl"
    wheel.parent.mkdir()
    files = {"nvidia/cu13/nvvm/bin/cicc": (b"\x7fELF cicc", 0o755), "nvidia/cu13/lib/libnvvm.so.4": (b"\x7fELF so", 0o755),
             "nvidia/cu13/nvvm/libdevice/libdevice.10.bc": (b"BC", 0o644)}
    record = "".join(f"{name},sha256=x,1\n" for name in files) + "nvidia_nvvm-13.0.88.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            z.writestr(info, data)
        z.writestr("nvidia_nvvm-13.0.88.dist-info/RECORD", record)
    out = tmp_path / "out"
    out.mkdir()
    with zipfile.ZipFile(cuda_carry.slim(wheel, out)) as z:
        names = set(z.namelist())
        assert "nvidia/cu13/lib/libnvvm.so.4" not in names and "nvidia/cu13/nvvm/bin/cicc" in names
        assert z.getinfo("nvidia/cu13/nvvm/bin/cicc").external_attr >> 16 == 0o755
        assert b"libnvvm" not in z.read("nvidia_nvvm-13.0.88.dist-info/RECORD")
        assert b"cicc" in z.read("nvidia_nvvm-13.0.88.dist-info/RECORD")
    assert cuda_carry.OUT.name == ".whl-cuda" and ".whl-cuda/" in (cuda_carry.ROOT / ".gitignore").read_text()
