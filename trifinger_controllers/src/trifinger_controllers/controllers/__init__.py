"""The structured policies of paper 004 §IV: CPC (cpc.py), CIC (cic.py), MP (mp.py)."""
