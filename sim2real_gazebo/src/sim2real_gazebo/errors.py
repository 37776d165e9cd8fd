"""The package's one error: every failure of the Gazebo container or session is a GazeboError
whose message is one line a person can act on."""


class GazeboError(RuntimeError):
    """No container engine or image, gzserver not starting or dying, a step that fails."""
