"""Running past one event loop: local worker processes (`--workers`), a run's simulations as Ray
tasks across a cluster (`--ray`), and per-provider request limits over all of them; in every
case the driver stays the only writer of the results file."""
