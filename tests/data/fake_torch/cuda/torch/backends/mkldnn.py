import sys

import torch
from torch.backends import ContextProp, PropModule


def is_available():
    return True


class MkldnnModule(PropModule):
    def is_available(self):
        return is_available()

    enabled = ContextProp(torch._C._get_mkldnn_enabled, torch._C._set_mkldnn_enabled)
    deterministic = ContextProp(
        torch._C._get_mkldnn_deterministic, torch._C._set_mkldnn_deterministic
    )


sys.modules[__name__] = MkldnnModule(sys.modules[__name__], __name__)
