# The fake and wrong-semantics settings of the flags catalog (section 2, "Fake flags that go
# unnoticed because no error is raised" and "These raise instead", each verified on torch
# 2.13.0+cpu: /work/shared/design/knowledge/flags-catalog.md). One per line; the test expects a
# finding on every line that ends with "# seed".
import torch
import torch.backends.xnnpack
from torch.backends import cudnn

torch.backends.cuda.memory_efficient = True  # seed
torch.backends.cuda.allow_tf32 = True  # seed
torch.backends.mkl.enabled = True  # seed
torch.backends.openmp.enabled = False  # seed
torch.backends.cuda.cufft_plan_cache = 1024  # seed
torch.backends.cuda.enable_flash_sdp = True  # seed
torch.backends.cuda.flash_sdp = True  # seed
cudnn.determinstic = True  # seed
torch.backends.nnpack.enabled = False  # seed
torch.backends.mha.fastpath = False  # seed
torch.backends.mps.enabled = True  # seed
torch.backends.opt_einsum.enable = True  # seed
torch.backends.cpu.capability = "AVX2"  # seed
torch.backends.cuda.matmul.allow_tf33 = True  # seed
torch.backends.cudnn.conv.allow_tf32 = True  # seed
torch.backends.xnnpack.enabled = True  # seed
algo = torch.backends.cudnn.get_convolution_forward_algorithm()  # seed
from torch.backends import register_backend  # seed
torch.backends.cudnn.fastest = True  # seed
