"""The base error of panda_fci: what goes wrong with the robot is a :class:`RobotError`, a
:class:`~panda_sim2real.PandaError` like every Panda-layer error (one line, for a person)."""
from panda_sim2real import PandaError

__all__ = ["RobotError"]
class RobotError(PandaError):
    """The robot cannot be reached or used: unreachable address, another protocol version, no
    real-time kernel where one is enforced, a lost connection, or a reflex that stopped it."""
