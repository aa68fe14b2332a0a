"""Prints the instruction sets PyTorch computes with here: ATen's own kernels (ATEN_CPU_CAPABILITY restricts them)
and MKL's, which run PyTorch's matrix products (MKL_ENABLE_INSTRUCTIONS restricts them; ATEN_CPU_CAPABILITY does
not). Its convolutions run on the oneDNN bundled with PyTorch (ONEDNN_MAX_CPU_ISA restricts them). An AVX2-only
machine is reproduced on an AVX-512 one only with all three set: bench/RESULTS.md."""
import os
import re
import subprocess
import sys

import torch

if len(sys.argv) > 1 and sys.argv[1] == "--matmul":
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    sys.exit(0)

env = dict(os.environ, MKL_VERBOSE="1")
out = subprocess.run([sys.executable, __file__, "--matmul"], env=env, capture_output=True, text=True).stdout
m = re.search(r"\(Intel\(R\) ([A-Z0-9-]+)\)", out)
mkl = m.group(1) if m else "unknown (no MKL_VERBOSE line)"
print(f"PyTorch isa: {torch.backends.cpu.get_cpu_capability()}, MKL isa: {mkl}")
