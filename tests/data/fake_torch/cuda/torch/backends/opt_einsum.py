import sys

from torch.backends import ContextProp, PropModule

_state = {"enabled": False, "strategy": None}  # the opt_einsum package is not installed


def is_available():
    return False


def _get_enabled():
    return _state["enabled"]


def _set_enabled(value):
    _state["enabled"] = value


class OptEinsumModule(PropModule):
    global enabled
    enabled = ContextProp(_get_enabled, _set_enabled)
    global strategy
    strategy = None


sys.modules[__name__] = OptEinsumModule(sys.modules[__name__], __name__)

enabled = bool(is_available())
strategy = "auto" if is_available() else None
