"""Shared helpers for the simulation tests (torch is required by every module here)."""

from __future__ import annotations

import pytest


@pytest.fixture
def sim():
    """Run the test body under a simulated GPU; undo every patch afterwards."""
    from devlint.simulate.budget import Limits
    from devlint.simulate.session import Simulation

    with Simulation(Limits(max_batches=None)) as simulation:
        yield simulation
