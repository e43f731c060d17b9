"""Running past one event loop: per-provider request limits, and a run's simulations as Ray
tasks across a cluster (the driver stays the only writer of the results file)."""
