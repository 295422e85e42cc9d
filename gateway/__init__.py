"""xgate: a streaming validation gateway for CNCF xRegistry message definitions."""

__version__ = "0.1.0"
