"""The experiments of paper 002 in simulation (PyBullet KUKA iiwa, not a real robot): the sine-
tracking data (``sine_tracking``), the random starts (``random_init``), the MLP and DeLaN
baselines (``baselines``), tracking with a learned model (``tracking``) and Table 1 with Fig. 1
(``table1``, ``table1_report``; tool ``reproduce_table1``). Built on the identification library,
which does not import them."""
