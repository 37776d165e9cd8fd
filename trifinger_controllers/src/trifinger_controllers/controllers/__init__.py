"""The structured policies of paper 004 §IV and their registry: CPC (cpc.py, §IV-B), CIC
(cic.py, §IV-C) and MP (mp.py, §IV-A), all implementing the ``Controller`` interface of base.py.
Any controller takes any grasp (tg, cg, og, pg: the mix-and-match of §VI). The modules are
imported on first use, so that importing the registry stays cheap."""
from __future__ import annotations

import importlib
import os
from typing import Optional

from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.params import ParameterSet
from trifinger_controllers.errors import TrifingerError

# name -> (module, class, parameter set, default grasp of the paper's pairing)
_REGISTRY: dict[str, tuple[str, str, str, str]] = {
    "cpc": ("cpc", "CartesianPositionController", "CPC_PARAMETERS", "tg"),
    "cic": ("cic", "CartesianImpedanceController", "CIC_PARAMETERS", "cg"),
    "mp": ("mp", "MotionPlanningController", "MP_PARAMETERS", "pg"),
}
CONTROLLERS = tuple(_REGISTRY)
GRASPS = ("tg", "cg", "og", "pg")


def _entry(name: str) -> tuple[str, str, str, str]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise TrifingerError(f"unknown controller {name!r}: expected one of {', '.join(CONTROLLERS)}") from None


def _module(name: str):
    return importlib.import_module(f"trifinger_controllers.controllers.{_entry(name)[0]}")


def default_parameters(name: str) -> ParameterSet:
    """The hyperparameters of controller ``name`` with their defaults and BO intervals."""
    return getattr(_module(name), _entry(name)[2])


def load_params(controller: str, path: "os.PathLike[str] | str") -> ParameterSet:
    """The hyperparameters of ``controller`` ("cpc", "cic", "mp") from the YAML file ``path``
    (e.g. ``optimize``'s output), validated against its :func:`default_parameters`."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"parameter file not found: {path}")
    return default_parameters(controller).load_yaml(path)


def default_grasp(name: str) -> str:
    """The grasp the paper pairs with the controller (CPC-TG, CIC-CG, MP-PG)."""
    return _entry(name)[3]


def make_controller(name: str, grasp: Optional[str] = None, params: Optional[ParameterSet] = None,
                    kinematics=None, level: int = 3, **options) -> Controller:
    """Controller ``name`` with ``grasp`` (default: the paper's pairing) and ``params`` (default:
    its defaults); ``options`` go to the controller (e.g. MP's ``seed``)."""
    grasp = grasp or default_grasp(name)
    if grasp not in GRASPS:
        raise TrifingerError(f"unknown grasp {grasp!r}: expected one of {', '.join(GRASPS)}")
    cls = getattr(_module(name), _entry(name)[1])
    return cls(grasp=grasp, params=params, kinematics=kinematics, level=level, **options)
