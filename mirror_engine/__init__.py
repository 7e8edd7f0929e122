"""The migration domain: plans, policies, target preparation, replication, offset mapping, cutover."""
