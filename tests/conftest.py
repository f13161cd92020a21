"""Suite-wide settings: property tests are deterministic (the README's ``pytest`` gives the same
result on every fresh clone): hypothesis draws from a fixed seed and keeps no example database."""

from hypothesis import settings

settings.register_profile("fairpair", derandomize=True, database=None, deadline=None)
settings.load_profile("fairpair")
