"""Suite-wide settings.

Property tests are deterministic in this suite: every hypothesis test draws the same examples on every
run (``derandomize``), so CI never turns red on an example no developer saw. A test that wants more
examples says so with its own ``@settings``; they all start from this profile.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("streamfns", derandomize=True, print_blob=True)
settings.load_profile("streamfns")
