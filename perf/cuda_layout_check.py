"""One NB201 network's loss and squared loss-gradient norm on the CPU and on CUDA, in channels-last
and NCHW, with and without cuDNN; and why ntk_lambda_min fails on CUDA, if it does. Needs a CUDA
device and the CIFAR-10 sample at .devdata/ (a folder the device run carries):

    python perf/cuda_layout_check.py > results/perf/cuda_layout_check.json

The committed output was made on an H200 (torch 2.11) while scoring still ran channels-last on
CUDA; it is why CUDA now runs NCHW. (`first_bn_mean` is a field the output kept, always null.)
"""
import json

import torch
import torch.nn.functional as F

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.evaluation.scoring import arch_seed, make_predictors, score_architecture
from naslib_plugins.spaces import get_space

space = get_space("nasbench201")
b = ImageBatches("cifar10", batch_size=64, seed=0, images=".devdata/cifar10_convnetjs_5k.npz")
x, y = b.batch(0)
arch = (0, 0, 0, 4, 3, 4)
key = space.hash(arch)


def run(device, cl=True, cudnn=True):
    torch.backends.cudnn.enabled = cudnn
    torch.manual_seed(arch_seed(0, key))
    m = space.build_model(arch, "cifar10")
    m = m.to(device=device, memory_format=torch.channels_last) if cl else m.to(device)
    m.train()
    xx = x.to(device) if cl else x.contiguous().to(device)
    out = m(xx)
    loss = F.cross_entropy(out, y.to(device))
    g = torch.autograd.grad(loss, [p for p in m.parameters()])
    return {"loss": float(loss), "logit_abs_mean": float(out.abs().mean()),
            "grad_sq": float(sum((t.double() ** 2).sum() for t in g)), "first_bn_mean": None}


res = {"cpu": run("cpu"), "cuda": run("cuda"), "cuda_nchw": run("cuda", cl=False),
       "cuda_nocudnn": run("cuda", cudnn=False), "cuda_nchw_nocudnn": run("cuda", cl=False, cudnn=False)}
torch.backends.cudnn.enabled = True
r = score_architecture(space, arch, "cifar10", make_predictors(["ntk_lambda_min"]), b, 0, device="cuda")
res["ntk_reason"] = r["reason"]
print(json.dumps(res, indent=1))
