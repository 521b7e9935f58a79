"""The ``ormock`` subcommands, a module each, named as the command: ``add_parser(commands)``
(its parser, options and help) and ``run(args) -> int`` (its exit code); ``ormock.cli`` lists
them and dispatches. Their helpers live beside them: ``timeline`` (``show --timeline``,
``demo``), ``workers`` and ``collector`` (``serve``)."""
