"""ophook._bisect.search, delta debugging over groups, against every planted culprit: one culprit
among up to 40 groups is named alone within ceil(2 log2 groups) verdicts (the run bound bisect
promises, less its three first runs); two groups needed together are both named; the budget's
end reaches the caller."""
import math
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._bisect.search import BudgetSpent, smallest_good_set  # noqa: E402


@pytest.mark.parametrize("groups", list(range(1, 41)))
def test_one_culprit_is_named_alone_within_the_bound(groups):
    bound = math.ceil(2 * math.log2(groups)) if groups > 1 else 0
    for culprit in range(groups):
        verdicts = []
        found = smallest_good_set(groups, lambda chosen: verdicts.append(chosen) or culprit in chosen)
        assert found == [culprit]
        assert len(verdicts) <= bound


@pytest.mark.parametrize("groups", [2, 3, 7, 16])
def test_groups_needed_together_are_all_named(groups):
    for first in range(groups):
        for second in range(first + 1, groups):
            found = smallest_good_set(groups, lambda chosen: first in chosen and second in chosen)
            assert found == [first, second]


def test_the_budget_s_end_reaches_the_caller():
    def spent(chosen):
        raise BudgetSpent()

    with pytest.raises(BudgetSpent):
        smallest_good_set(5, spent)
