"""popsim's version (the C++ core's popsim/version.h says the same)."""

VERSION = "0.24.0"
