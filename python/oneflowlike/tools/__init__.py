"""Command-line tools that ship with the package (python -m oneflowlike.tools.<name>): profile_cluster
measures this machine for the auto-parallel cost model."""
