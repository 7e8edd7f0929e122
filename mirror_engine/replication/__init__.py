"""The replication engine's parts, composed by `mirror_engine.engine.Replicator` (see its docstring)."""
