"""The experiments of paper 001 with their figures and plots (matplotlib): the delivery vehicle
(``vehicle``, tool ``vehicle-experiment``) and the Panda against the reality stand-in (``panda``,
tool ``panda-kernels``). Built on the kernel library; the library does not import them."""
