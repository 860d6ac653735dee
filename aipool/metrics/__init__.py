"""What Prometheus scrapes: counters of every hop, and gauges of the pool's shared state."""
