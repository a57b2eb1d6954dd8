"""Where and in what precision training runs: the default device, the autocast context, bf16 support."""

from collections.abc import Callable

import torch


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def precision_context(precision: str, device) -> Callable:
    """A factory of the autocast context for `precision` ("fp32": a no-op) on `device`'s type."""
    kind = torch.device(device).type
    return lambda: torch.autocast(kind, dtype=torch.bfloat16, enabled=precision == "bf16")


def device_name(device) -> str:
    """What a benchmark or sweep ran on, in words: the GPU's name, or the CPU's model."""
    device = torch.device(device)
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_info()["model"]


def cpu_info() -> dict:
    """The CPU's model name and its flags, from /proc/cpuinfo (empty where there is none)."""
    info = {"model": "unknown", "flags": set()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and info["model"] == "unknown":
                    info["model"] = value.strip()
                elif key.strip() == "flags":
                    info["flags"] = set(value.split())
                    break
    except OSError:
        pass
    return info


def bf16_matmul_native(device=None) -> bool:
    """Whether bf16 matmuls run on matrix units here (CUDA with bf16, or a CPU with AVX512-BF16 or AMX);
    elsewhere they are emulated and slower than float32."""
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool({"avx512_bf16", "amx_bf16"} & cpu_info()["flags"])
