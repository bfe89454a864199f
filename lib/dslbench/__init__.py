"""DSL-Bench helper library: tasks, toolchains, sandbox, generation, run store, pipeline."""
__version__ = "0.1.0"
