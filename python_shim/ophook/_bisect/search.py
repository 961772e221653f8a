"""Delta debugging over groups (Zeller and Hildebrandt's isolation of failure-inducing input, in
the recursive form that also finds groups needed together): a small set of groups whose widening
makes the run good. Pure: the runs are behind `good`."""


class BudgetSpent(Exception):
    """No run is left in --max-runs."""


def smallest_good_set(count, good):
    """A set of group indices, from range(count), such that good(set) holds and, for one culprit,
    found in at most 2·log2(count) calls of good: each level tests the larger half, then the
    other, and recurses into the one that is good alone. When neither is, both hold a culprit, and
    each half is searched with the other's groups kept widened. good(all) is taken as known.
    BudgetSpent propagates from `good`."""

    def find(candidates, kept):
        if len(candidates) == 1:
            return candidates
        split = (len(candidates) + 1) // 2
        first, second = candidates[:split], candidates[split:]
        if good(kept | set(first)):
            return find(first, kept)
        if good(kept | set(second)):
            return find(second, kept)
        found_first = find(first, kept | set(second))
        return found_first + find(second, kept | set(found_first))

    return sorted(find(list(range(count)), frozenset()))
