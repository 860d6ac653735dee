"""What people and probes read: the status and report tables, the usage endpoint, their words."""
