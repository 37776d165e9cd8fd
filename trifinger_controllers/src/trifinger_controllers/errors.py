"""The one base error of the package, :class:`TrifingerError`, and its subclasses per concern:

* :class:`ConfigurationError` (here): a node's parameter or a tool's input that cannot be used;
* ``grasps.GraspError``: no grasp of the requested kind is feasible for the cube pose;
* ``rpl_policy.PolicyFileError``: a residual policy file that cannot be used.

Every error the package raises on purpose is one of these (a bad argument to a library function
is a TrifingerError). TrifingerError is a ValueError, so that ``except ValueError`` catches all
of them as before.
The tools turn it into one line, ``PROG: error: MESSAGE``, exit code 2
(``sim2real_checks.cli.run``); the nodes into one ``[FATAL]`` line, exit code 1."""
from __future__ import annotations


class TrifingerError(ValueError):
    """The one base error of trifinger_controllers; subclasses per concern (one line each)."""


class ConfigurationError(TrifingerError):
    """A parameter of a node or an input of a tool is unusable (one line)."""
