"""Errors a user can cause. ``cli.py`` prints their message as one line and exits 2."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in what the user passed: a file, an argument, a rule. Exit code 2."""


class RuleFileError(UserError):
    """A malformed rule, data or settings file: the message is ``path:line: what``."""


class WorkloadError(UserError):
    """A malformed workload file or an unknown task/value."""


class RuleConflictError(UserError):
    """Two rules of equal precedence want different values for one setting (a rule-set bug)."""
