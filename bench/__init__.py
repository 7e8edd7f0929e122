"""The benchmarks: a package only so that import-linter checks their imports. Each script runs as
`python bench/<script>.py` and imports its neighbours by name (`from harness import ...`)."""
