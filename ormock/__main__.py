from ormock.cli import main

raise SystemExit(main())
