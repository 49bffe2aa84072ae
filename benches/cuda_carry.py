"""Build `.whl-cuda/`: what `benches/gpu_cuda_language.py` needs on the H200, under the device call's 64 MiB carry.

The device has torch (with CUDA's runtime) but no nvcc and no internet. The toolkit's wheels are about 100 MB:
nvidia-nvvm carries libnvvm.so (27 MB packed) beside cicc, and nvidia-cuda-nvcc carries nvlink (12 MB packed);
torch's extension builder compiles each .cu with `nvcc -c` (cicc, ptxas, fatbinary, cudafe++) and links with the
host compiler, so neither is run. This downloads the wheels matching torch 2.11's CUDA 13.0 (the device's), repacks
those two without them (RECORD rewritten, file modes kept), and copies from `.whl/` the pure-Python wheels trialtui
runs with, leaving out the SSH and MCP ones. Run here, where the package registry is reachable:

    python benches/cuda_carry.py            # then, on the device (carry [".whl-cuda"]):
    pip install -q --no-index --no-deps --target /tmp/site .whl-cuda/*.whl; export PYTHONPATH=/tmp/site:$PWD
    TRIALTUI_WHEELS=.whl-cuda python benches/gpu_session.py gpu_cuda_language:300

`--check DIR`: also compile a kernel for sm_90 with the slim toolkit here (needs g++ and, in DIR, the
nvidia-cuda-runtime wheel for its headers), so a missing tool shows before the device call.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".whl-cuda"
CARRY_BYTES = 64 * 2**20
TOOLKIT = ("nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-crt==13.0.88", "nvidia-nvvm==13.0.88", "nvidia-cuda-cccl==13.0.85",
           "ninja")
DROPPED = ("nvidia/cu13/lib/libnvvm.so", "nvidia/cu13/bin/nvlink")  # not run by `nvcc -c` (prefixes)
LEFT_OUT = ("asyncssh", "cryptography", "cffi", "pycparser", "mcp", "pydantic", "starlette", "uvicorn", "httpx",
            "httpcore", "jsonschema", "referencing", "rpds", "opentelemetry", "pyjwt", "sse_starlette", "attrs",
            "python_multipart", "h11")


def slim(wheel: Path, into: Path) -> Path:
    """The wheel without DROPPED's files, its RECORD without their lines; each entry's mode kept."""
    target = into / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename.startswith(DROPPED):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                gone = tuple(d.encode() for d in DROPPED)
                data = b"".join(line for line in data.splitlines(keepends=True) if not line.startswith(gone))
            dst.writestr(info, data)
    return target


def build() -> int:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps",
                        "--python-version", "3.12", "--platform", "manylinux_2_27_x86_64", "--platform",
                        "manylinux2014_x86_64", "-d", tmp, *TOOLKIT], check=True)
        for wheel in Path(tmp).glob("*.whl"):
            slim(wheel, OUT)
    for wheel in (ROOT / ".whl").glob("*.whl"):
        if not wheel.name.lower().startswith(LEFT_OUT):
            shutil.copy2(wheel, OUT / wheel.name)
    total = sum(p.stat().st_size for p in OUT.glob("*.whl"))
    print(f"{OUT}: {len(list(OUT.glob('*.whl')))} wheels, {total / 2**20:.1f} MiB (the carry holds {CARRY_BYTES / 2**20:.0f})")
    return 0 if total <= CARRY_BYTES else 1


def check(runtime_dir: Path) -> int:
    """Compile a kernel for sm_90 with the slim toolkit and the runtime wheel's headers, in a scratch folder."""
    with tempfile.TemporaryDirectory() as tmp:
        for wheel in [*OUT.glob("nvidia_*.whl"), *runtime_dir.glob("nvidia_cuda_runtime*.whl")]:
            with zipfile.ZipFile(wheel) as z:
                for info in z.infolist():
                    z.extract(info, tmp)
                    mode = info.external_attr >> 16
                    if mode:
                        (Path(tmp) / info.filename).chmod(mode & 0o777)
        home = Path(tmp) / "nvidia" / "cu13"
        source = Path(tmp) / "add.cu"
        source.write_text('#include <cuda_runtime.h>\n__global__ void add(float* o, const float* a, const float* b, int n)'
                          ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = a[i] + b[i]; }\n')
        done = subprocess.run([str(home / "bin" / "nvcc"), "-c", "-arch=sm_90", "-o", str(Path(tmp) / "add.o"), str(source)],
                              capture_output=True, text=True)
        print(f"nvcc -c for sm_90 with the slim toolkit: {'ok' if done.returncode == 0 else 'FAILED'} {done.stderr[-600:]}")
        return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, help="a folder holding the nvidia-cuda-runtime wheel: compile a kernel here")
    args = parser.parse_args()
    return build() or (check(args.check) if args.check else 0)


if __name__ == "__main__":
    sys.exit(main())
