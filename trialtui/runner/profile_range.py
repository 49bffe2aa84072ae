"""The NVTX range both sides of an ncu profile name: profile_target pushes it around the one call that is
profiled, profile_job tells ncu to count only inside it. One home, so neither side spells it alone."""

RANGE = "trialtui_profile"
