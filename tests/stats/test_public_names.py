"""``fairpair.stats``'s public face: every lazily exported name is in ``__all__`` and resolves."""

from __future__ import annotations

import fairpair.stats as st


def test_every_lazy_name_is_public_and_every_public_name_lazy():
    assert sorted(set(st._WHERE) - set(st.__all__)) == []
    assert sorted(set(st.__all__) - set(st._WHERE)) == []
    assert len(st.__all__) == len(set(st.__all__))


def test_the_planning_and_crossed_names_resolve_to_their_modules():
    # names that were reachable but missing from __all__ (so from `import *` and the docs' table)
    for name, module in [("crossed_power", "_power"), ("VarianceComponents", "_power"),
                         ("estimate_variance_components", "_power"), ("crossed_from_cells", "_crossed"),
                         ("corrected_dispersion", "_dispersion"), ("FewClustersWarning", "_bootstrap"),
                         ("MIN_CLUSTERS_FOR_INTERVAL", "_bootstrap")]:
        assert getattr(st, name) is getattr(__import__(f"fairpair.stats.{module}", fromlist=[name]), name)
    ns: dict = {}
    exec("from fairpair.stats import *", ns)
    assert {"crossed_power", "crossed_from_cells", "corrected_dispersion"} <= set(ns)
