"""hprm_bridge."""
