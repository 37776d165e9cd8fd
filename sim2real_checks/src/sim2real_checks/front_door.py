"""A package's front door: its ``__init__`` names the public API, and a name is imported from its
module only when first used, so ``import panda_sim2real`` stays cheap (no PyBullet, no torch)
and needs no ROS master. Other packages import only these names (tools/test/test_front_doors.py).

Usage in a package's ``__init__.py``::

    from sim2real_checks.front_door import lazy_exports

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {
        "limits": ["JointLimits", "DEFAULT_LIMITS_FILE"],
        "robot": ["SimulatedRobot"],
    })
"""
from __future__ import annotations

import pkgutil
from importlib import import_module
from typing import Any, Callable, Mapping, Sequence

__all__ = ["lazy_exports"]


def lazy_exports(package: str, modules: Mapping[str, Sequence[str]]
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(``__all__``, the module ``__getattr__`` of PEP 562, ``__dir__``) of ``package`` for
    ``modules``: {submodule: the names it exports}. A name in two submodules, or a name that is
    also a submodule's (which Python would put in its place once that submodule is imported), is
    a ValueError."""
    namespace = import_module(package).__dict__
    submodules = {info.name for info in pkgutil.iter_modules(namespace.get("__path__", []))}
    owner: dict[str, str] = {}
    for module, names in modules.items():
        for name in names:
            if name in owner:
                raise ValueError(f"{package}: {name} is exported by both {owner[name]} and {module}")
            if name in submodules:
                raise ValueError(f"{package}: {name} (of {module}) is also the name of a submodule")
            owner[name] = module
    names = sorted(owner)

    def __getattr__(name: str) -> Any:
        if name not in owner:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{owner[name]}"), name)
        namespace[name] = value   # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return names, __getattr__, __dir__
