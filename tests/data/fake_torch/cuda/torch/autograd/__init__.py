from torch import _C


class set_detect_anomaly:
    """Context manager / function, as in torch/autograd/anomaly_mode.py."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(mode)

    def __enter__(self):
        return None

    def __exit__(self, *args):
        _C._set_anomaly_enabled(self.prev)
