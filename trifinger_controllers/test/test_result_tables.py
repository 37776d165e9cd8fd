"""The paper-layout tables (tables.py) from result files."""
import json
import os
import subprocess
import sys

import pytest

from trifinger_controllers.tables import bo_table, mix_and_match_table, rpl_table

RESULTS = os.path.join(os.path.dirname(__file__), "..", "results")
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "tables")


def cell(controller, grasp, error, ori, drop):
    summary = {"orientation_error_deg": ori, "position_error_cm": 0.5, "reward": -1.0}
    return {"controller": controller, "grasp": grasp, "init_orientation_error_deg": error,
            "mean": summary, "std": {k: 0.1 for k in summary}, "drop_rate": drop,
            "trials": [{}] * 5}


def test_mix_and_match_table_has_a_row_per_pairing_and_columns_per_error():
    results = [cell(c, g, e, 10.0 + e, 0.2) for c in ("mp", "cpc") for g in ("tg", "cg") for e in (10.0, 25.0)]
    results.append({**cell("cic", "pg", 10.0, None, 1.0),
                    "mean": {"orientation_error_deg": None, "position_error_cm": None, "reward": None}})
    table = mix_and_match_table(results).splitlines()
    assert table[0].count("δθ = 10°") == 3 and table[0].count("δθ = 25°") == 3
    rows = [line for line in table[2:] if line.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows] == ["CPC", "CPC", "CIC", "MP", "MP"]
    assert "| CIC | PG | – | – | 100 |" in rows[2]  # every trial dropped: no errors, 100 % drops
    assert "35.0 ± 0.1" in rows[0]
    with pytest.raises(ValueError):
        mix_and_match_table([])


def test_bo_and_rpl_tables_from_the_committed_results():
    with open(os.path.join(RESULTS, "bo_cpc_l3.json")) as f:
        bo = json.load(f)
    with open(os.path.join(RESULTS, "rpl_mp_l3.json")) as f:
        rpl = json.load(f)
    table = bo_table([bo]).splitlines()
    assert table[2].startswith("| CPC-TG |") and table[3].startswith("| CPC-TG w BO |")
    assert f"{bo['table_iii']['bo']['mean']['cumulative_reward']:.0f} ±" in table[3]
    table = rpl_table([rpl]).splitlines()
    assert [r.split("|")[1].strip() for r in table[2:]] == ["MP-PG", "MP-PG w RPL"]


def test_tables_script_refuses_a_missing_file(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--bo", str(tmp_path / "missing.json")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "cannot read" in out.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"controller": "cpc"}))
    out = subprocess.run([sys.executable, SCRIPT, "--bo", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and "malformed" in out.stderr
