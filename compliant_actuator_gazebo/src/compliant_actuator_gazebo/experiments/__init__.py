"""The validation experiments of paper 003 §4 with their figures: the step responses of Fig. 8
(``step_response``, ``step_metrics``), the chirp response of Fig. 11 (``frequency_response``),
the 2-DoF steps and sinusoid of Figs. 12-13 (``two_dof``), and the §4.3 arm trials (``arm_trial``)
with iterative learning control (``ilc``) and the CLIK push (``clik``). Run by the ``reproduce_*``
tools; built on the compliant-actuator library, which does not import them."""
