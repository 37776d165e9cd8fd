"""The paper-layout tables (tables.py) from result files."""
import json
import os
import subprocess
import sys

import pytest

from trifinger_controllers.tables import (bo_table, level_table, mix_and_match_table, plot_rpl_curves,
                                          rpl_curve_table, rpl_table)

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


def result(controller, grasp, level=3, seed=2019, trials=20, r=-500.0, drop=0.0, error=None):
    summary = {"cumulative_reward": r, "position_error_cm": 0.2, "tracked_position_error_cm": 0.3,
               "orientation_error_deg": 12.0, "tracked_orientation_error_deg": 13.0}
    return {"controller": controller, "grasp": grasp, "level": level, "seed": seed,
            "orientation_error_deg": error, "trials": [{}] * trials, "mean": summary,
            "std": {k: 0.1 for k in summary}, "mean_all": summary, "drop_rate": drop}


def test_bo_table_pairs_manual_and_tuned_rows_on_the_same_trials():
    manual = [result("cpc", "tg"), result("mp", "pg", r=-800.0)]
    table = bo_table(manual, [result("mp", "pg", r=-300.0, drop=0.05)]).splitlines()
    assert [row.split("|")[1].strip() for row in table[2:]] == ["MP-PG", "MP-PG w BO"]
    assert "-300 ± 0" in table[3] and "| 5 |" in table[3] and "0.300 ± 0.100" in table[3]
    with pytest.raises(ValueError, match="not the same trials"):
        bo_table(manual, [result("cpc", "tg", seed=1)])
    with pytest.raises(ValueError, match="no manual result"):
        bo_table(manual, [result("cic", "cg")])
    # level 4: paired with the manual level-4 row of the same initial error, orientation shown
    level4 = [result("cpc", "tg", level=4, error=10.0, r=-700.0)]
    table = bo_table(manual + level4, [result("cpc", "tg", level=4, error=10.0, r=-310.0)]).splitlines()
    assert table[2].startswith("| CPC-TG | 4 (10°) | -700 ± 0 |") and "| 12.0 ± 0.1 |" in table[3]
    with pytest.raises(ValueError, match="no manual result for CPC-TG at level 4"):
        bo_table(manual, [result("cpc", "tg", level=4, error=25.0)])


def test_level_table_shows_true_and_tracked_errors():
    rows = level_table([result("cpc", "tg"), {**result("mp", "pg", level=4, error=25.0), "aligned": True}])
    lines = rows.splitlines()
    assert lines[2].startswith("| CPC-TG | 3 | – | 20 | 0.200 ± 0.100 | 0.300 ± 0.100 |")
    assert lines[3].startswith("| MP-PG + alignment | 4 | 25 |")


def test_rpl_table_from_the_committed_results():
    with open(os.path.join(RESULTS, "rpl_mp_l3.json")) as f:
        rpl = json.load(f)
    table = rpl_table([rpl]).splitlines()
    assert [r.split("|")[1].strip() for r in table[2:]] == ["MP-PG", "MP-PG w RPL"]


def test_rpl_learning_curves_from_the_committed_results(tmp_path):
    with open(os.path.join(RESULTS, "rpl_mp_l3.json")) as f:
        rpl = json.load(f)
    curve = rpl["learning_curve"]
    table = rpl_curve_table([rpl]).splitlines()
    assert len(table) == 2 + len(curve)
    first = table[2].split("|")
    assert first[1].strip() == f"{curve[0]['step']:,}"
    assert first[2].strip().startswith(f"{curve[0]['mean_all']['cumulative_reward']:.0f} / ")
    path = tmp_path / "curves.png"
    plot_rpl_curves([rpl], str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tables_script_refuses_a_missing_file(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--bench", str(tmp_path / "missing.json")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "cannot read" in out.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"level3": [{"controller": "cpc"}]}))
    out = subprocess.run([sys.executable, SCRIPT, "--bench", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and "malformed" in out.stderr
