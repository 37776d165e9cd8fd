"""The base error of panda_pairs: every error it raises on purpose is a :class:`BagError` or one
of panda_sim2real's (a :class:`~panda_sim2real.PandaError`, so a tool catches both at once)."""
from panda_sim2real import PandaError

__all__ = ["BagError"]
class BagError(PandaError):
    """A bag is missing, corrupt, truncated, or lacks the topics a tool needs."""
