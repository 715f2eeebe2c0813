"""popsim's version (the C++ core's popsim/version.h says the same)."""

VERSION = "0.25.0"
