"""The delivery vehicle of paper 001 §4-5: our Ackermann simulation (``model``), the mission
program with its perf(t) monitor (``mission``), message conversions and checks (``messages``,
``checks``), in-process runs and bags (``run``) and the nodes ``vehicle_sim`` and ``mission``
(``sim_node``, ``mission_node``). Built on the kernel library; the library does not import it."""
