"""The one exception kernel_manager_ros raises on purpose; its message is one line meant for a
person (the tools print it as ``PROG: error: ...`` and exit with code 2)."""


class KernelError(ValueError):
    """Bad input to the kernel library: NaN states, unequal or empty histories, a bag without a
    configured topic, a malformed configuration or kernel file, a kernel file of another state
    dimension. Multi-line messages (e.g. from the YAML parser) are folded into one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
