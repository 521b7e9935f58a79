"""The code of ``ormock`` subcommands that have a module of their own (``ormock.cli`` parses and
dispatches)."""
