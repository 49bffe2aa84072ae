"""The machine a result was measured on, as the result records it (GPU, driver, versions, the lane's GPU)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def environment(device) -> dict[str, Any]:
    import torch
    import triton

    env: dict[str, Any] = {
        "device": device.type,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),  # the lane this job was pinned to
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(
            gpu=props.name,
            sm_count=props.multi_processor_count,
            l2_bytes=getattr(props, "L2_cache_size", None),
            capability=f"{props.major}.{props.minor}",
            cuda=torch.version.cuda,
            driver=_driver_version(),
        )
    else:
        env.update(gpu=None, interpreted=os.environ.get("TRITON_INTERPRET") == "1")
    return env


def _driver_version() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None

