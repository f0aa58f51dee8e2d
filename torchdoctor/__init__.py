"""torchdoctor: diagnose a PyTorch environment and tell its user how to configure it.

Importing this package is cheap: it imports neither torch nor the probes. The public API
functions import what they need when called.
"""

from __future__ import annotations

from torchdoctor.version import __version__

__all__ = ["__version__", "probe", "check", "recommend", "apply", "audit"]


def probe(**kwargs):  # noqa: D103 - documented in torchdoctor.api
    from torchdoctor.api import probe as _probe

    return _probe(**kwargs)


def check(facts=None, report=None, python=None, **kwargs):  # noqa: D103
    from torchdoctor.api import check as _check

    return _check(facts=facts, report=report, python=python, **kwargs)


def recommend(task=None, **workload):  # noqa: D103
    from torchdoctor.api import recommend as _recommend

    return _recommend(task=task, **workload)


def apply(task=None, **workload):  # noqa: D103
    from torchdoctor.api import apply as _apply

    return _apply(task=task, **workload)


def audit(**kwargs):  # noqa: D103
    from torchdoctor.api import audit as _audit

    return _audit(**kwargs)
