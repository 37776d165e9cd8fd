"""The pair-bag fixtures live with the pair bag format in panda_pairs/test (test_dataset_tools);
Realeasy's tests build their bags with them."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "panda_pairs", "test"))
