"""Where models, batches and the predictors' linear algebra run.

Weights are always drawn on the CPU generator (seeded from the run seed and the architecture's
hash) and then moved, so one seed gives the same initial network on every device; what a device
changes is only the floating-point order of its kernels (see README, "Devices")."""
from __future__ import annotations

import torch

from naslib_plugins.errors import UserError

DEVICE_CHOICES = "auto | cpu | cuda | cuda:N | mps"
CPU = torch.device("cpu")


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """`auto` (or None): the first CUDA device if there is one, else the CPU. A device named
    explicitly must exist here; nothing falls back silently."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    spec = "auto" if spec is None else str(spec).strip().lower()
    if spec == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise UserError(f"unknown device {spec!r}; known: {DEVICE_CHOICES}") from None
    if device.type == "cpu":
        return device
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"device {spec!r}: this torch ({torch.__version__}) sees no CUDA device")
        index = 0 if device.index is None else device.index
        if index >= torch.cuda.device_count():
            raise UserError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA device(s) here")
        return torch.device("cuda", index)
    if device.type == "mps":
        if not torch.backends.mps.is_available():
            raise UserError(f"device {spec!r}: MPS is not available here")
        return device
    raise UserError(f"unsupported device {spec!r}; known: {DEVICE_CHOICES}")


def environment(device: torch.device) -> dict:
    """What a result depends on besides its settings: recorded in every output."""
    # float32 scores move at rounding level with the kernels torch picks: its version and the CPU's
    # vector extensions (ATEN_CPU_CAPABILITY)
    out = {"device": str(device), "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    if device.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(device)
        # TF32 moves gradient scores by up to 8% against float32 (README, "Devices")
        out["tf32"] = {"cudnn": torch.backends.cudnn.allow_tf32, "matmul": torch.backends.cuda.matmul.allow_tf32}
    return out
