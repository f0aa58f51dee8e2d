import sys
import types

import torch

_NAMES = {0: "none", 1: "fbgemm", 2: "qnnpack", 3: "x86"}


class _QEngineProp:
    def __get__(self, obj, objtype):
        return _NAMES[torch._C._get_qengine()]

    def __set__(self, obj, val):
        torch._C._set_qengine({v: k for k, v in _NAMES.items()}[val])


class _SupportedQEnginesProp:
    def __get__(self, obj, objtype):
        return [_NAMES[e] for e in torch._C._supported_qengines()]

    def __set__(self, obj, val):
        raise RuntimeError("Assignment not supported")


class QuantizedEngine(types.ModuleType):
    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)

    engine = _QEngineProp()
    supported_engines = _SupportedQEnginesProp()


sys.modules[__name__] = QuantizedEngine(sys.modules[__name__], __name__)
